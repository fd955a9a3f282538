package nfs

// OpenFiles returns the number of descriptors h's open-file cache holds.
func OpenFiles(h *DirHandler) int { return h.files.len() }
