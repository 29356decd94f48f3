-- start a session
INSERT INTO "leasehold_sessions" (id, holder, created_at_us, renewed_at_us, expires_at_us) VALUES (?, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 15000000)
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- start a session that advertises its peer wake-ups
INSERT INTO "leasehold_sessions" (id, holder, created_at_us, renewed_at_us, expires_at_us, wake_addrs, wake_key) VALUES (?, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 15000000, ?, ?)
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "4286f278f60e;10.0.0.5:40123,127.0.0.1:40123", "89d8f755dfe70476693f3c7c2df36e55fd028134a29d108723b3863dbb794569";

-- read the peer wake-up adverts of the sessions live or expired less than grace ago
SELECT wake_addrs, wake_key FROM "leasehold_sessions" WHERE wake_key <> '' AND expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 30000000;

-- renew the session: the one statement of a renewal tick
UPDATE "leasehold_sessions" SET renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 15000000 WHERE id = ? AND expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) RETURNING notice
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read the session
SELECT renewed_at_us, expires_at_us, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us FROM "leasehold_sessions" WHERE id = ?
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- end the session
DELETE FROM "leasehold_sessions" WHERE id = ?
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- list the sessions (status pages)
SELECT id, holder, renewed_at_us, expires_at_us, wake_addrs, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us FROM "leasehold_sessions" ORDER BY holder, id;

-- prune sessions expired long ago
DELETE FROM "leasehold_sessions" WHERE expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000;

-- insert lease rows if absent
INSERT INTO "leasehold_leases" (name, expires_at_us) VALUES (?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)), (?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (name) DO UPDATE SET expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE "leasehold_leases".holder = ''
-- args: "global/billing", "global/outbox";

-- acquire (new epochs in the same statement)
UPDATE "leasehold_leases" SET holder = ?, session_id = ?, epoch = epoch + 1, acquired_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), expires_at_us = 253402300799999999, resign_epoch = 0, prefer_holder = '', prefer_until_us = 0 WHERE name IN (?, ?) AND (NOT ("leasehold_leases".holder <> '' AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) OR EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)))) OR "leasehold_leases".session_id = ?) AND EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = ? AND s.expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) AND ("leasehold_leases".prefer_until_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) OR "leasehold_leases".prefer_holder IN (?, ?, ?)) RETURNING name, epoch
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "node-a", "0123456789abcdef0123456789abcdef";

-- release one lease
UPDATE "leasehold_leases" SET holder = '', session_id = '', expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE session_id = ? AND ((name = ? AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports";

-- record a resign request for one term, with a preferred holder
UPDATE "leasehold_leases" SET resign_epoch = 7, prefer_holder = ?, prefer_until_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 30000000 WHERE name = ? AND epoch = 7 AND session_id = ?
-- args: "node-b", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- record a resign request for one term, without a preference
UPDATE "leasehold_leases" SET resign_epoch = 7, prefer_holder = ?, prefer_until_us = 0 WHERE name = ? AND epoch = 7 AND session_id = ?
-- args: "", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- notify a session of a resign request
UPDATE "leasehold_sessions" SET notice = notice + 1 WHERE id = ?
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read a session's pending resign requests
SELECT name, epoch FROM "leasehold_leases" WHERE name IN (?, ?) AND session_id = ? AND resign_epoch = epoch AND resign_epoch > 0
-- args: "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- release three leases
UPDATE "leasehold_leases" SET holder = '', session_id = '', expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE session_id = ? AND ((name = ? AND epoch = 7) OR (name = ? AND epoch = 3) OR (name = ? AND epoch = 12))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- the database file, for the wake-up sockets next to it
SELECT file FROM pragma_database_list WHERE name = 'main';

-- start-up: the connection's busy timeout
PRAGMA busy_timeout;

-- set a term's data (a member's acknowledged generation)
UPDATE "leasehold_leases" SET data = ? WHERE name = ? AND epoch = 7 AND session_id = ? AND EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = ? AND s.expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "42", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- publish a pool's next generation (compare-and-set)
UPDATE "leasehold_leases" SET epoch = epoch + 1, data = ?, renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE name = ? AND holder = '' AND epoch = 41
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members
DELETE FROM "leasehold_leases" WHERE name >= ? AND name < ? AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000)))
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- keyed locks, first: take the write lock
UPDATE "leasehold_leases" SET epoch = epoch WHERE 1 = 0 RETURNING name;

-- fencing check, first: take the write lock
UPDATE "leasehold_leases" SET epoch = epoch WHERE 1 = 0;

-- keyed locks: lock floor rows (or lock rows), with their epochs
SELECT name, epoch FROM "leasehold_leases" WHERE name IN (?, ?) ORDER BY name
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks: create lock rows (or floor rows) at their floors' epochs
INSERT INTO "leasehold_leases" (name, epoch, expires_at_us) VALUES (?, 12, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)), (?, 7, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: raise the floors to the epochs released
UPDATE "leasehold_leases" SET epoch = CASE WHEN name = ? AND epoch < 12 THEN 12 WHEN name = ? AND epoch < 7 THEN 7 ELSE epoch END WHERE name IN (?, ?)
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9", "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: delete the rows of the terms
DELETE FROM "leasehold_leases" WHERE session_id = ? AND ((name = ? AND epoch = 12) OR (name = ? AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "lock|global/accounts|42", "lock|global/accounts|7";

-- keyed locks, prune: read up to 500 dead lock rows
SELECT name, epoch FROM "leasehold_leases" WHERE name >= ? AND name < ? AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000))) ORDER BY name LIMIT 500
-- args: "lock|global/accounts|", "lock|global/accounts}";

-- keyed locks, prune: delete those of them still dead at the epoch read
DELETE FROM "leasehold_leases" WHERE ((name = ? AND epoch = 12) OR (name = ? AND epoch = 7)) AND (("leasehold_leases".session_id = '' AND "leasehold_leases".expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000) OR ("leasehold_leases".session_id <> '' AND NOT EXISTS (SELECT 1 FROM "leasehold_sessions" s WHERE s.id = "leasehold_leases".session_id AND s.expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000)))
-- args: "lock|global/accounts|42", "lock|global/accounts|7";

-- read leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us, 0 AS hold_until_us, 0 AS epoch_floor FROM "leasehold_leases" l LEFT JOIN "leasehold_sessions" s ON s.id = l.session_id WHERE l.name IN (?, ?)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us, 0 AS hold_until_us, 0 AS epoch_floor FROM "leasehold_leases" l LEFT JOIN "leasehold_sessions" s ON s.id = l.session_id ORDER BY l.name;

-- list leases by prefix
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us, 0 AS hold_until_us, 0 AS epoch_floor FROM "leasehold_leases" l LEFT JOIN "leasehold_sessions" s ON s.id = l.session_id WHERE l.name >= ? AND l.name < ? ORDER BY l.name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us;

-- fencing check inside the caller's transaction
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE((SELECT s.renewed_at_us FROM "leasehold_sessions" s WHERE s.id = l.session_id), l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE((SELECT s.expires_at_us FROM "leasehold_sessions" s WHERE s.id = l.session_id), 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us, 0 AS hold_until_us, 0 AS epoch_floor FROM "leasehold_leases" l WHERE l.name = ?
-- args: "global/billing";

-- partitioned query: member 1 of 3 by an integer key (Assignment.Scope)
SELECT * FROM orders WHERE (("orders"."id" % 3) + 3) % 3 = 1;

-- partitioned query: partitions 2, 5 and 6 of 8 by an integer key
SELECT * FROM orders WHERE (("orders"."id" % 8) + 8) % 8 IN (2, 5, 6);

-- partitioned query: member 1 of 3 by a bucket column (Assignment.BucketScope)
SELECT * FROM orders WHERE state = ? AND ("bucket" >= 1365 AND "bucket" < 2730)
-- args: "pending";

-- partitioned query: two ranges of buckets
SELECT * FROM orders WHERE (("bucket" >= 0 AND "bucket" < 512) OR ("bucket" >= 1024 AND "bucket" < 1536));

-- create the version table
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));

-- migration 1: create the lease table
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));

-- record migration 1
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (1, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "create the lease table";

-- migration 2: add the data column for pool generations and member acknowledgements
ALTER TABLE "leasehold_leases" ADD COLUMN data TEXT NOT NULL DEFAULT '';

-- record migration 2
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (2, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "add the data column for pool generations and member acknowledgements";

-- migration 3: rename pool rows to keys that cannot collide
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');

-- migration 3: rename pool rows to keys that cannot collide
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) > 13 AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))));

-- migration 3: rename pool rows to keys that cannot collide
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;

-- record migration 3
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "rename pool rows to keys that cannot collide";

-- migration 4: create the session table
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));

-- record migration 4
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "create the session table";

-- migration 5: add the session column to the lease table
ALTER TABLE "leasehold_leases" ADD COLUMN session_id TEXT NOT NULL DEFAULT '';

-- record migration 5
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "add the session column to the lease table";

-- migration 6: add the resign request columns to the lease table
ALTER TABLE "leasehold_leases" ADD COLUMN resign_epoch INTEGER NOT NULL DEFAULT 0;

-- migration 6: add the resign request columns to the lease table
ALTER TABLE "leasehold_leases" ADD COLUMN prefer_holder TEXT NOT NULL DEFAULT '';

-- migration 6: add the resign request columns to the lease table
ALTER TABLE "leasehold_leases" ADD COLUMN prefer_until_us INTEGER NOT NULL DEFAULT 0;

-- record migration 6
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "add the resign request columns to the lease table";

-- migration 7: add the notice counter to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN notice INTEGER NOT NULL DEFAULT 0;

-- record migration 7
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "add the notice counter to the session table";

-- migration 8: create the incarnation table
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));

-- record migration 8
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "create the incarnation table";

-- migration 9: add the incarnation column to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';

-- record migration 9
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "add the incarnation column to the session table";

-- migration 10: add the peer wake-up columns to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN wake_addrs TEXT NOT NULL DEFAULT '';

-- migration 10: add the peer wake-up columns to the session table
ALTER TABLE "leasehold_sessions" ADD COLUMN wake_key TEXT NOT NULL DEFAULT '';

-- record migration 10
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, ?, (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000))
-- args: "add the peer wake-up columns to the session table";

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM "leasehold_schema_migrations";

-- migration lock
BEGIN IMMEDIATE;

-- migration lock
COMMIT;

