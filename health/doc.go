// Package health serves liveness and readiness checks for a process that
// runs a coordination.Coordinator, as net/http handlers for an orchestrator's
// probes (Kubernetes livenessProbe and readinessProbe, a load balancer's
// health check).
//
// # Liveness
//
// Liveness fails (503) only when restarting the process could help: its
// renewals keep failing (at least two in a row, by default) while it
// still holds leases or pool memberships whose trust is about to run out
// (less than a quarter of TTL left, by default). A follower that holds
// nothing stays live whatever the database does, and so does a holder
// after a single failed renewal: the coordinator retries renewals until
// the trust deadline, and when the deadline passes the process gives its
// leases up on its own and holds nothing. A database outage therefore
// fails the liveness of the holders for a short while at most, and never
// keeps a whole fleet restarting. The window in which a probe sees the
// failure lasts the chosen headroom: probe at least twice within it.
// Config.Failures and Config.Headroom change the two thresholds; a value
// out of range is an error that names the field and the value.
//
// # Readiness
//
// Readiness is ready (200) while the coordinator runs: Run has the schema
// in place and serves elections, and has not returned. With
// Config.RequireHealthy it is also not ready while the coordinator's health
// checks (coordination.Config.HealthCheck) keep it from campaigning: no
// check has passed yet, or the last one failed. ReadyWhenLeading is ready
// only while this process leads an election, for active/passive services
// whose traffic must go to the leader alone.
//
// # Responses
//
// Every handler answers any method with a short text/plain body: "ok" and
// 200, or the reason and 503. The reason never contains an error's text,
// which could carry addresses from a connection string; the coordinator's
// logs have it. Responses are not cached.
package health
