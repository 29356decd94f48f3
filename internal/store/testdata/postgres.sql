-- start a session
INSERT INTO "leasehold_sessions" (id, holder, created_at_us, renewed_at_us, expires_at_us, incarnation) VALUES ($1, $2, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 15000000, (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- start a session that advertises its peer wake-ups
INSERT INTO "leasehold_sessions" (id, holder, created_at_us, renewed_at_us, expires_at_us, wake_addrs, wake_key, incarnation) VALUES ($1, $2, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 15000000, $3, $4, (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "4286f278f60e;10.0.0.5:40123,127.0.0.1:40123", "89d8f755dfe70476693f3c7c2df36e55fd028134a29d108723b3863dbb794569";

-- read the peer wake-up adverts of the sessions live or expired less than grace ago
SELECT wake_addrs, wake_key FROM "leasehold_sessions" WHERE wake_key <> '' AND expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 30000000;

-- renew the session: the one statement of a renewal tick
UPDATE "leasehold_sessions" SET renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 15000000 WHERE id = $1 AND expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AND incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) RETURNING notice
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read the session
SELECT renewed_at_us, expires_at_us, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us FROM "leasehold_sessions" WHERE id = $1
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- end the session
DELETE FROM "leasehold_sessions" WHERE id = $1
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- list the sessions (status pages)
SELECT id, holder, renewed_at_us, expires_at_us, wake_addrs, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us FROM "leasehold_sessions" ORDER BY holder, id;

-- prune sessions expired long ago
DELETE FROM "leasehold_sessions" WHERE expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000;

-- insert lease rows if absent
INSERT INTO "leasehold_leases" (name, expires_at_us) SELECT n, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) FROM unnest(CAST($1 AS text[])) AS n ON CONFLICT (name) DO UPDATE SET expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) WHERE "leasehold_leases".holder = ''
-- args: "{\"global/billing\",\"global/outbox\"}";

-- acquire, first: lock the named rows, in name order
SELECT name FROM "leasehold_leases" WHERE name IN (SELECT unnest(CAST($1 AS text[]))) ORDER BY name FOR UPDATE
-- args: "{\"global/billing\",\"global/outbox\"}";

-- acquire (new epochs in the same statement)
UPDATE "leasehold_leases" SET holder = $1, session_id = $2, epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) END + 1, acquired_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), expires_at_us = 253402300799999999, resign_epoch = 0, prefer_holder = '', prefer_until_us = 0 WHERE name IN (SELECT unnest(CAST($3 AS text[]))) AND (NOT ("leasehold_leases".holder <> '' AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) OR EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)))) OR "leasehold_leases".session_id = $4) AND EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = $5 AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) AND ("leasehold_leases".prefer_until_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) OR "leasehold_leases".prefer_holder IN ($6, $7, $8)) AND EXISTS (SELECT 1 FROM "leasehold_incarnation" i WHERE i.id = 1 AND i.incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AND i.hold_until_us <= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) RETURNING name, epoch
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "{\"global/billing\",\"global/outbox\"}", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "node-a", "0123456789abcdef0123456789abcdef";

-- release one lease
UPDATE "leasehold_leases" SET holder = '', session_id = '', expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) WHERE session_id = $1 AND ((name = $2 AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports";

-- record a resign request for one term, with a preferred holder
UPDATE "leasehold_leases" SET resign_epoch = 7, prefer_holder = $1, prefer_until_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 30000000 WHERE name = $2 AND epoch = 7 AND session_id = $3
-- args: "node-b", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- record a resign request for one term, without a preference
UPDATE "leasehold_leases" SET resign_epoch = 7, prefer_holder = $1, prefer_until_us = 0 WHERE name = $2 AND epoch = 7 AND session_id = $3
-- args: "", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- notify a session of a resign request
UPDATE "leasehold_sessions" SET notice = notice + 1 WHERE id = $1
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read a session's pending resign requests
SELECT name, epoch FROM "leasehold_leases" WHERE name IN (SELECT unnest(CAST($1 AS text[]))) AND session_id = $2 AND resign_epoch = epoch AND resign_epoch > 0
-- args: "{\"global/billing\",\"global/outbox\"}", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- release three leases
UPDATE "leasehold_leases" SET holder = '', session_id = '', expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) FROM unnest(CAST($1 AS text[]), CAST($2 AS bigint[])) AS t(name, epoch) WHERE "leasehold_leases".session_id = $3 AND "leasehold_leases".name = t.name AND "leasehold_leases".epoch = t.epoch
-- args: "{\"cluster/eu-1/reports\",\"global/billing\",\"global/outbox\"}", "{7,3,12}", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- release three leases, notifying the listeners at commit
WITH r AS (UPDATE "leasehold_leases" SET holder = '', session_id = '', expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) FROM unnest(CAST($1 AS text[]), CAST($2 AS bigint[])) AS t(name, epoch) WHERE "leasehold_leases".session_id = $3 AND "leasehold_leases".name = t.name AND "leasehold_leases".epoch = t.epoch RETURNING "leasehold_leases".name), a AS (SELECT count(*) AS n, string_agg(name, E'\n') AS names FROM r) SELECT n, CASE WHEN n = 0 THEN '' ELSE CAST(pg_notify($4, CASE WHEN octet_length(names) <= 7900 THEN names ELSE '' END) AS text) END FROM a
-- args: "{\"cluster/eu-1/reports\",\"global/billing\",\"global/outbox\"}", "{7,3,12}", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "leasehold_leases";

-- notify the listeners (a pool's change)
SELECT CAST(pg_notify($1, $2) AS text)
-- args: "leasehold_leases", "pool|global/orders|generation";

-- listen for notifications
LISTEN "leasehold_leases";

-- listen for a listening connection's probe, first
LISTEN "leasehold_probe_0f1e2d3c4b5a69788796a5b4c3d2e1f0";

-- send a listening connection its probe
SELECT CAST(pg_notify($1, $2) AS text)
-- args: "leasehold_probe_0f1e2d3c4b5a69788796a5b4c3d2e1f0", "|leasehold-probe|";

-- stop listening for the probe, once it arrived
UNLISTEN "leasehold_probe_0f1e2d3c4b5a69788796a5b4c3d2e1f0";

-- begin a decision on the listening connection
BEGIN ISOLATION LEVEL READ COMMITTED;

-- set a term's data (a member's acknowledged generation)
UPDATE "leasehold_leases" SET data = $1 WHERE name = $2 AND epoch = 7 AND session_id = $3 AND EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = $4 AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "42", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- set a term's data, notifying the listeners at commit (an acknowledgement that wakes the pool's collector)
WITH w AS (UPDATE "leasehold_leases" SET data = $1 WHERE name = $2 AND epoch = 7 AND session_id = $3 AND EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = $4 AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) RETURNING 1), a AS (SELECT count(*) AS n FROM w) SELECT n, CASE WHEN n = 0 THEN '' ELSE CAST(pg_notify($5, $6) AS text) END FROM a
-- args: "42", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "leasehold_leases", "pool|global/orders|wake|a1b2";

-- publish a pool's next generation (compare-and-set)
UPDATE "leasehold_leases" SET epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) END + 1, data = $1, renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) WHERE name = $2 AND holder = '' AND epoch = 41 AND EXISTS (SELECT 1 FROM "leasehold_incarnation" i WHERE i.id = 1 AND i.incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) AND i.hold_until_us <= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members, 1 of 2: lock those that look dead
SELECT name FROM "leasehold_leases" WHERE name >= $1 AND name < $2 AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000))) ORDER BY name FOR UPDATE
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- prune dead pool members, 2 of 2: delete those of them still dead
DELETE FROM "leasehold_leases" WHERE name IN (SELECT unnest(CAST($1 AS text[]))) AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000)))
-- args: "{\"global/billing\",\"global/outbox\"}";

-- keyed locks: lock floor rows (or lock rows), with their epochs
SELECT name, epoch FROM "leasehold_leases" WHERE name IN (SELECT unnest(CAST($1 AS text[]))) ORDER BY name FOR UPDATE
-- args: "{\"lockfloor|global/accounts|3\",\"lockfloor|global/accounts|9\"}";

-- keyed locks: create lock rows (or floor rows) at their floors' epochs
INSERT INTO "leasehold_leases" (name, epoch, expires_at_us) VALUES ($1, 12, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)), ($2, 7, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: raise the floors to the epochs released
UPDATE "leasehold_leases" SET epoch = CASE WHEN name = $1 AND epoch < 12 THEN 12 WHEN name = $2 AND epoch < 7 THEN 7 ELSE epoch END WHERE name IN (SELECT unnest(CAST($3 AS text[])))
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9", "{\"lockfloor|global/accounts|3\",\"lockfloor|global/accounts|9\"}";

-- keyed locks, release: delete the rows of the terms
DELETE FROM "leasehold_leases" WHERE session_id = $1 AND ((name = $2 AND epoch = 12) OR (name = $3 AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "lock|global/accounts|42", "lock|global/accounts|7";

-- keyed locks, release: delete the rows of the terms, notifying the listeners at commit
WITH r AS (DELETE FROM "leasehold_leases" WHERE session_id = $1 AND ((name = $2 AND epoch = 12) OR (name = $3 AND epoch = 7)) RETURNING "leasehold_leases".name), a AS (SELECT count(*) AS n, string_agg(name, E'\n') AS names FROM r) SELECT n, CASE WHEN n = 0 THEN '' ELSE CAST(pg_notify($4, CASE WHEN octet_length(names) <= 7900 THEN names ELSE '' END) AS text) END FROM a
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "lock|global/accounts|42", "lock|global/accounts|7", "leasehold_leases";

-- keyed locks, prune: read up to 500 dead lock rows
SELECT name, epoch FROM "leasehold_leases" WHERE name >= $1 AND name < $2 AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000))) ORDER BY name LIMIT 500
-- args: "lock|global/accounts|", "lock|global/accounts}";

-- keyed locks, prune: lock them, in name order
SELECT name FROM "leasehold_leases" WHERE name IN (SELECT unnest(CAST($1 AS text[]))) ORDER BY name FOR UPDATE
-- args: "{\"lock|global/accounts|42\",\"lock|global/accounts|7\"}";

-- keyed locks, prune: delete those of them still dead at the epoch read
DELETE FROM "leasehold_leases" WHERE ((name = $1 AND epoch = 12) OR (name = $2 AND epoch = 7)) AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000)))
-- args: "lock|global/accounts|42", "lock|global/accounts|7";

-- read leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) THEN i.hold_until_us ELSE -1 END FROM "leasehold_incarnation" i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) AS epoch_floor FROM "leasehold_leases" l LEFT JOIN "leasehold_sessions" s ON s.id = l.session_id WHERE l.name IN (SELECT unnest(CAST($1 AS text[])))
-- args: "{\"global/billing\",\"global/outbox\"}";

-- list all leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) THEN i.hold_until_us ELSE -1 END FROM "leasehold_incarnation" i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) AS epoch_floor FROM "leasehold_leases" l LEFT JOIN "leasehold_sessions" s ON s.id = l.session_id ORDER BY l.name;

-- list leases by prefix
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) THEN i.hold_until_us ELSE -1 END FROM "leasehold_incarnation" i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) AS epoch_floor FROM "leasehold_leases" l LEFT JOIN "leasehold_sessions" s ON s.id = l.session_id WHERE l.name >= $1 AND l.name < $2 ORDER BY l.name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us;

-- fencing check inside the caller's transaction
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE((SELECT s.renewed_at_us FROM "leasehold_sessions" s WHERE s.id = l.session_id), l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE((SELECT s.expires_at_us FROM "leasehold_sessions" s WHERE s.id = l.session_id), 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) THEN i.hold_until_us ELSE -1 END FROM "leasehold_incarnation" i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM "leasehold_incarnation" i WHERE i.id = 1), 0) AS epoch_floor FROM "leasehold_leases" l WHERE l.name = $1 FOR SHARE OF l
-- args: "global/billing";

-- partitioned query: member 1 of 3 by an integer key (Assignment.Scope)
SELECT * FROM orders WHERE (("orders"."id" % 3) + 3) % 3 = 1;

-- partitioned query: partitions 2, 5 and 6 of 8 by an integer key
SELECT * FROM orders WHERE (("orders"."id" % 8) + 8) % 8 IN (2, 5, 6);

-- partitioned query: member 1 of 3 by a bucket column (Assignment.BucketScope)
SELECT * FROM orders WHERE state = $1 AND ("bucket" >= 1365 AND "bucket" < 2730)
-- args: "pending";

-- partitioned query: two ranges of buckets
SELECT * FROM orders WHERE (("bucket" >= 0 AND "bucket" < 512) OR ("bucket" >= 1024 AND "bucket" < 1536));

-- failover: create the incarnation row unless it exists
INSERT INTO "leasehold_incarnation" (id, incarnation, previous, adopted_at_us, hold_until_us, epoch_floor) VALUES (1, (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8), '', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), 0, 0) ON CONFLICT (id) DO NOTHING;

-- failover: adopt the incarnation answering, with a hold-off and a new epoch floor
UPDATE "leasehold_incarnation" SET hold_until_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + CASE WHEN COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM "leasehold_sessions" s), 0) > 15000000 THEN COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM "leasehold_sessions" s), 0) ELSE 15000000 END, epoch_floor = CASE WHEN epoch_floor >= COALESCE((SELECT MAX(l.epoch) FROM "leasehold_leases" l), 0) THEN epoch_floor ELSE COALESCE((SELECT MAX(l.epoch) FROM "leasehold_leases" l), 0) END + 4294967296, previous = incarnation, adopted_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) WHERE id = 1 AND incarnation <> (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8);

-- failover: move a live session to the incarnation answering
UPDATE "leasehold_sessions" SET incarnation = (SELECT CAST(system_identifier AS TEXT) FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) WHERE id = $1 AND expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- failover: the terms the rows show a session holding
SELECT name, epoch FROM "leasehold_leases" WHERE session_id = $1 AND holder <> ''
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- create the version table
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));

-- migration 1: create the lease table
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name));

-- record migration 1
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (1, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "create the lease table";

-- migration 2: add the data column for pool generations and member acknowledgements
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS data TEXT NOT NULL DEFAULT '';

-- record migration 2
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (2, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "add the data column for pool generations and member acknowledgements";

-- migration 3: rename pool rows to keys that cannot collide
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');

-- migration 3: rename pool rows to keys that cannot collide
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) > 13 AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)));

-- migration 3: rename pool rows to keys that cannot collide
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;

-- record migration 3
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "rename pool rows to keys that cannot collide";

-- migration 4: create the session table
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));

-- record migration 4
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "create the session table";

-- migration 5: add the session column to the lease table
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS session_id VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';

-- record migration 5
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "add the session column to the lease table";

-- migration 6: add the resign request columns to the lease table
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;

-- record migration 6
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "add the resign request columns to the lease table";

-- migration 7: add the notice counter to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;

-- record migration 7
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "add the notice counter to the session table";

-- migration 8: create the incarnation table
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));

-- record migration 8
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "create the incarnation table";

-- migration 9: add the incarnation column to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';

-- record migration 9
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "add the incarnation column to the session table";

-- migration 10: add the peer wake-up columns to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';

-- record migration 10
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, $1, CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))
-- args: "add the peer wake-up columns to the session table";

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM "leasehold_schema_migrations";

-- does the version table exist
SELECT count(*) FROM information_schema.tables WHERE table_schema = CURRENT_SCHEMA() AND table_name = $1 AND table_type = 'BASE TABLE'
-- args: "leasehold_schema_migrations";

-- migration lock
SET LOCAL lock_timeout = 60000;

-- migration lock
SELECT pg_advisory_xact_lock(2070517655109335331);

