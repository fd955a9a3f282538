// Package guesttest holds the helpers of the guest test packages
// (e2e/internal/..., build tag e2eguest), which run inside the Soft-RoCE
// VM (e2e/README.md): shell commands with a time limit, the kernel
// client's mount command and its mountstats, rdma-nfsd as a child
// process, test data and the kernel log. It is an ordinary package so that
// host tests may share its data helpers (Pattern, RequireData).
package guesttest
