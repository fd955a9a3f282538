// Package monotime reads the time from the monotonic clock alone, for the
// durations the per-call paths measure. time.Now reads two clocks, the
// wall clock and the monotonic one; where the clock source cannot be read
// from user space (the HPET of an emulated machine, whose clock_gettime
// is a system call that reads a device register) each reading is a
// system call, and a time that only ever ends up in a duration needs one.
package monotime

import "time"

// epoch is the origin of Now's readings.
var epoch = time.Now()

// Now returns the current time from one reading of the monotonic clock.
// Durations taken with it (Sub, Since, Until, against another Now or a
// time.Now) are exact, as the monotonic readings decide them; its wall
// clock reading is the process start's plus the monotonic time since,
// which departs from the system's wall clock by every step that clock
// took since (a time to subtract, not to print or to send).
func Now() time.Time { return epoch.Add(time.Since(epoch)) }
