package redistest

// CurrentMaster returns the master's address as the first live sentinel
// that answers reports it, and false when none does. Unlike MasterAddr it
// never fails the test, so a goroutine other than the test's may call it.
func (s *Sentinel) CurrentMaster() (string, bool) {
	for _, sen := range s.Sentinels {
		if !sen.live() {
			continue
		}
		if addr, ok := sentinelMaster(sen.Addr()); ok {
			return addr, true
		}
	}
	return "", false
}
