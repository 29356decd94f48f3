-- ======== from version 0 ========
-- leasehold coordination schema version 10 for sqlite
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', resign_epoch INTEGER NOT NULL DEFAULT 0, prefer_holder TEXT NOT NULL DEFAULT '', prefer_until_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (1, 'create the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) > 13 AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))));
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 1 ========
-- leasehold coordination schema for sqlite, from version 1 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS data) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS session_id) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', resign_epoch INTEGER NOT NULL DEFAULT 0, prefer_holder TEXT NOT NULL DEFAULT '', prefer_until_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT 0 AS resign_epoch, '' AS prefer_holder, 0 AS prefer_until_us) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) > 13 AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))));
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 2 ========
-- leasehold coordination schema for sqlite, from version 2 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS data) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS session_id) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', resign_epoch INTEGER NOT NULL DEFAULT 0, prefer_holder TEXT NOT NULL DEFAULT '', prefer_until_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT 0 AS resign_epoch, '' AS prefer_holder, 0 AS prefer_until_us) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) > 13 AND LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) - 13) || '|member|' || SUBSTR("leasehold_leases".name, LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', ''))) + 1, LENGTH("leasehold_leases".name) - LENGTH(RTRIM("leasehold_leases".name, REPLACE("leasehold_leases".name, '/', '')))));
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 3 ========
-- leasehold coordination schema for sqlite, from version 3 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS data) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS session_id) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', resign_epoch INTEGER NOT NULL DEFAULT 0, prefer_holder TEXT NOT NULL DEFAULT '', prefer_until_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT 0 AS resign_epoch, '' AS prefer_holder, 0 AS prefer_until_us) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 4 ========
-- leasehold coordination schema for sqlite, from version 4 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS data) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS session_id) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', resign_epoch INTEGER NOT NULL DEFAULT 0, prefer_holder TEXT NOT NULL DEFAULT '', prefer_until_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT 0 AS resign_epoch, '' AS prefer_holder, 0 AS prefer_until_us) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT 0 AS notice) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS incarnation) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS wake_addrs, '' AS wake_key) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 5 ========
-- leasehold coordination schema for sqlite, from version 5 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS data) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT '' AS session_id) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', PRIMARY KEY (name));
DROP TABLE IF EXISTS "leasehold_leases_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_leases_rebuild" (name TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', epoch INTEGER NOT NULL DEFAULT 0, acquired_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', resign_epoch INTEGER NOT NULL DEFAULT 0, prefer_holder TEXT NOT NULL DEFAULT '', prefer_until_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (name));
INSERT INTO "leasehold_leases_rebuild" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us) SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data, session_id, resign_epoch, prefer_holder, prefer_until_us FROM "leasehold_leases" NATURAL LEFT JOIN (SELECT 0 AS resign_epoch, '' AS prefer_holder, 0 AS prefer_until_us) AS added;
DROP TABLE "leasehold_leases";
ALTER TABLE "leasehold_leases_rebuild" RENAME TO "leasehold_leases";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT 0 AS notice) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS incarnation) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS wake_addrs, '' AS wake_key) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 6 ========
-- leasehold coordination schema for sqlite, from version 6 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT 0 AS notice) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS incarnation) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS wake_addrs, '' AS wake_key) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 7 ========
-- leasehold coordination schema for sqlite, from version 7 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT 0 AS notice) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS incarnation) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS wake_addrs, '' AS wake_key) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation TEXT NOT NULL DEFAULT '', previous TEXT NOT NULL DEFAULT '', adopted_at_us INTEGER NOT NULL DEFAULT 0, hold_until_us INTEGER NOT NULL DEFAULT 0, epoch_floor INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 8 ========
-- leasehold coordination schema for sqlite, from version 8 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT 0 AS notice) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS incarnation) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS wake_addrs, '' AS wake_key) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 9 ========
-- leasehold coordination schema for sqlite, from version 9 to 10
-- Every statement is safe to apply again.
-- Apply with sqlite3 -bail, so that a failed statement ends the transaction.
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT 0 AS notice) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS incarnation) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
DROP TABLE IF EXISTS "leasehold_sessions_rebuild";
CREATE TABLE IF NOT EXISTS "leasehold_sessions_rebuild" (id TEXT NOT NULL, holder TEXT NOT NULL DEFAULT '', created_at_us INTEGER NOT NULL DEFAULT 0, renewed_at_us INTEGER NOT NULL DEFAULT 0, expires_at_us INTEGER NOT NULL DEFAULT 0, notice INTEGER NOT NULL DEFAULT 0, incarnation TEXT NOT NULL DEFAULT '', wake_addrs TEXT NOT NULL DEFAULT '', wake_key TEXT NOT NULL DEFAULT '', PRIMARY KEY (id));
INSERT INTO "leasehold_sessions_rebuild" (id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key) SELECT id, holder, created_at_us, renewed_at_us, expires_at_us, notice, incarnation, wake_addrs, wake_key FROM "leasehold_sessions" NATURAL LEFT JOIN (SELECT '' AS wake_addrs, '' AS wake_key) AS added;
DROP TABLE "leasehold_sessions";
ALTER TABLE "leasehold_sessions_rebuild" RENAME TO "leasehold_sessions";
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', (CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)) ON CONFLICT (version) DO NOTHING;
COMMIT;

-- ======== from version 10 ========
-- leasehold coordination schema for sqlite, from version 10 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description TEXT NOT NULL DEFAULT '', applied_at_us INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (version));

