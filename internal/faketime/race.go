//go:build race

package faketime

const raceEnabled = true
