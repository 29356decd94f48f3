-- insert the lease row if absent
INSERT INTO "leasehold_leases" (name) VALUES (?) ON CONFLICT (name) DO NOTHING
-- args: "global/billing";

-- acquire (new epoch in the same statement)
UPDATE "leasehold_leases" SET holder = ?, epoch = epoch + 1, acquired_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 15000000 WHERE name = ? AND (holder = '' OR holder = ? OR expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) RETURNING epoch
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "global/billing", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- renew one lease
UPDATE "leasehold_leases" SET renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 15000000 WHERE holder = ? AND name = ? AND epoch = 7 AND expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- renew three leases in one statement
UPDATE "leasehold_leases" SET renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000), expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) + 15000000 WHERE holder = ? AND name IN (?, ?, ?) AND epoch = CASE name WHEN ? THEN 7 WHEN ? THEN 3 WHEN ? THEN 12 END AND expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- release one lease
UPDATE "leasehold_leases" SET holder = '', expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE holder = ? AND name = ? AND epoch = 7
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- release three leases
UPDATE "leasehold_leases" SET holder = '', expires_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE holder = ? AND name IN (?, ?, ?) AND epoch = CASE name WHEN ? THEN 7 WHEN ? THEN 3 WHEN ? THEN 12 END
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- set a term's data (a member's acknowledged generation)
UPDATE "leasehold_leases" SET data = ? WHERE holder = ? AND name = ? AND epoch = 7 AND expires_at_us >= (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)
-- args: "42", "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- publish a pool's next generation (compare-and-set)
UPDATE "leasehold_leases" SET epoch = epoch + 1, data = ?, renewed_at_us = (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) WHERE name = ? AND holder = '' AND epoch = 41
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members
DELETE FROM "leasehold_leases" WHERE name >= ? AND name < ? AND expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AND (holder = '' OR expires_at_us < (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) - 150000000)
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- read leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us FROM "leasehold_leases" WHERE name IN (?, ?)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us FROM "leasehold_leases" ORDER BY name;

-- list leases by prefix
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us FROM "leasehold_leases" WHERE name >= ? AND name < ? ORDER BY name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us;

-- fencing check inside the caller's transaction
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000) AS now_us FROM "leasehold_leases" WHERE name = ?
-- args: "global/billing";

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

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM "leasehold_schema_migrations";

-- migration lock
BEGIN IMMEDIATE;

-- migration lock
COMMIT;

