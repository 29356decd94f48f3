package bench

import "strings"

// Report is one line a worker process writes to its stdout, as JSON.
type Report struct {
	// Type is "ready" (the coordinator serves, and the elections or the
	// pool member have started), "held" (every election of the process
	// is held), "assigned" (a pool assignment started), "stats" (every
	// second) or "exit" (the last line); with -terms also "elected" (a
	// term's leader work started) and "ended" (it returned); with -units
	// also "unit" (a unit of leader work done).
	Type string `json:"t"`
	// AtMS is the time since the process started, in milliseconds.
	AtMS int64 `json:"at_ms"`
	// WallNS is the wall-clock instant ("ready", "assigned", "elected",
	// "ended", "unit") as time.Now().UnixNano(): the runner, on the same
	// host, compares it with the instants at which it sent signals.
	WallNS int64 `json:"wall_ns,omitempty"`
	// Epoch is the term's epoch ("elected", "ended", "unit"), and Unit
	// the count of units done in the process ("unit").
	Epoch int64 `json:"epoch,omitempty"`
	Unit  int64 `json:"unit,omitempty"`

	Held int `json:"held,omitempty"` // elections whose work is running now
	Want int `json:"want,omitempty"` // elections the process runs

	// Pool assignment ("assigned").
	Index      int   `json:"index,omitempty"`
	Count      int   `json:"count,omitempty"`
	Generation int64 `json:"generation,omitempty"`

	// Totals since the start ("stats" and "exit").
	Errors     int   `json:"errors,omitempty"`      // EventError events
	JoinErrors int   `json:"join_errors,omitempty"` // of them, failed pool joins (IsJoinError)
	Lost       int   `json:"lost,omitempty"`        // EventLost events
	Dropped    int   `json:"dropped,omitempty"`     // events the subscription dropped
	Stmts      int64 `json:"stmts,omitempty"`       // statements sent (Trace)
	// FirstErrors are the texts of the first few error events.
	FirstErrors []string `json:"first_errors,omitempty"`
	// RenewUS are the client round trips of the renewals since the
	// previous "stats" line, in microseconds.
	RenewUS []int64 `json:"renew_us,omitempty"`
	// OpenConns is database/sql's count of open connections at the line.
	OpenConns int `json:"open_conns,omitempty"`

	// "exit": statements sent after the signal, the time from the signal
	// to the end of the shutdown, and the error Run returned, if any.
	StmtsAfterTerm int64  `json:"stmts_after_term,omitempty"`
	TermToDoneMS   int64  `json:"term_to_done_ms,omitempty"`
	Err            string `json:"err,omitempty"`
}

// IsJoinError reports whether err, from an EventError, is a pool member
// failing to join: creating the pool's generation row or acquiring its
// membership row (coordination's pool step "create pool row" or "join").
func IsJoinError(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, ": join: ") || strings.Contains(s, ": create pool row: ")
}
