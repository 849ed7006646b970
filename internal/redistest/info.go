package redistest

// InfoInt returns the integer field name of the INFO section of the server
// at addr (on a fresh connection, as Do), and false when the server does
// not answer or has no such field.
func InfoInt(addr, section, name string) (int64, bool) {
	info, err := DoBulk(addr, "INFO", section)
	if err != nil {
		return 0, false
	}
	return infoInt(info, name)
}
