package client

// SetPortmapPort makes GetPort ask port when its address names none, until
// the returned function restores the default (tests: a refused or silent
// port instead of the host's rpcbind).
func SetPortmapPort(port int) (restore func()) {
	old := portmapPort
	portmapPort = port
	return func() { portmapPort = old }
}
