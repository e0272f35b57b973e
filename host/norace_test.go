//go:build !race

package host_test

// raceEnabled: the tests run with -race (allocations are not counted).
const raceEnabled = false
