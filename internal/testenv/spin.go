package testenv

import "sync"

// Spin runs step over and over in each of n goroutines until the returned
// stop is called; stop waits for them to end and may be called more than
// once (a test may stop early, before failing, and again when it is done).
// It is the background load of the race tests: readers racing a writer.
func Spin(n int, step func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				step()
			}
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
