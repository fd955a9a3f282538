//go:build !(linux && cgo)

package rdmacore

// Devices fails: this build has no rdma-core to ask. The error matches
// verbs.ErrNotSupported.
func Devices() ([]DeviceInfo, error) { return nil, errUnsupportedBuild }
