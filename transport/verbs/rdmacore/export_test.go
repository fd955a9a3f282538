//go:build linux && cgo

package rdmacore

// SetYieldThread replaces what a polling Wait calls to yield its OS
// thread, and returns the function that restores it. Call it before the
// connections it affects exist, and restore it once they are closed.
func SetYieldThread(f func()) (restore func()) {
	old := yieldThread
	yieldThread = f
	return func() { yieldThread = old }
}
