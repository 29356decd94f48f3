-- ======== from version 0 ========
-- leasehold coordination schema version 10 for postgres
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_leases" (name VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (1, 'create the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS data TEXT NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) > 13 AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)));
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS session_id VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 1 ========
-- leasehold coordination schema for postgres, from version 1 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS data TEXT NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) > 13 AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)));
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS session_id VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 2 ========
-- leasehold coordination schema for postgres, from version 2 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation' WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH("leasehold_leases".name) > 16 AND SUBSTR("leasehold_leases".name, LENGTH("leasehold_leases".name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, LENGTH("leasehold_leases".name) - 16) || '|generation');
UPDATE "leasehold_leases" SET name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)) WHERE "leasehold_leases".name >= 'pool/' AND "leasehold_leases".name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) > 13 AND (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) < LENGTH("leasehold_leases".name) AND SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM "leasehold_leases" AS taken WHERE taken.name = 'pool|' || SUBSTR("leasehold_leases".name, 6, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) - 13) || '|member|' || SUBSTR("leasehold_leases".name, (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1) + 1, LENGTH("leasehold_leases".name) - (LENGTH("leasehold_leases".name) - STRPOS(REVERSE("leasehold_leases".name), '/') + 1)));
INSERT INTO "leasehold_leases" (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM "leasehold_leases" AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' ON CONFLICT (name) DO NOTHING;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS session_id VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 3 ========
-- leasehold coordination schema for postgres, from version 3 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_sessions" (id VARCHAR(255) COLLATE "C" NOT NULL, holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (4, 'create the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS session_id VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 4 ========
-- leasehold coordination schema for postgres, from version 4 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS session_id VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 5 ========
-- leasehold coordination schema for postgres, from version 5 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
ALTER TABLE "leasehold_leases" ADD COLUMN IF NOT EXISTS resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN IF NOT EXISTS prefer_holder VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS prefer_until_us BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 6 ========
-- leasehold coordination schema for postgres, from version 6 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS notice BIGINT NOT NULL DEFAULT 0;
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 7 ========
-- leasehold coordination schema for postgres, from version 7 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
CREATE TABLE IF NOT EXISTS "leasehold_incarnation" (id INTEGER NOT NULL, incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', previous VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (8, 'create the incarnation table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 8 ========
-- leasehold coordination schema for postgres, from version 8 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS incarnation VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 9 ========
-- leasehold coordination schema for postgres, from version 9 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
ALTER TABLE "leasehold_sessions" ADD COLUMN IF NOT EXISTS wake_addrs VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS wake_key VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '';
INSERT INTO "leasehold_schema_migrations" (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) ON CONFLICT (version) DO NOTHING;

-- ======== from version 10 ========
-- leasehold coordination schema for postgres, from version 10 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS "leasehold_schema_migrations" (version INTEGER NOT NULL, description VARCHAR(255) COLLATE "C" NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));

