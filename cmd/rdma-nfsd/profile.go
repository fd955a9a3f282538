package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts the runtime's CPU profiler (-cpuprofile) writing
// to path; stop ends it and closes the file, so the profile is complete
// only after a clean shutdown (SIGTERM, SIGINT).
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		return nil
	}, nil
}
