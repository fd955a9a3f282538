// Package stats holds the small statistics that the benchmark command and
// the end-to-end tests share when they compare runs of a noisy machine.
package stats

import "slices"

// Median returns the median of xs (the mean of the two middle values for an
// even count) and true, or 0 and false when xs is empty. xs is not
// modified.
func Median(xs []float64) (float64, bool) {
	if len(xs) == 0 {
		return 0, false
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2], true
	}
	return (s[n/2-1] + s[n/2]) / 2, true
}
