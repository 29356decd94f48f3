-- insert the lease row if absent
INSERT INTO "leasehold_leases" (name) VALUES ($1) ON CONFLICT (name) DO NOTHING
-- args: "global/billing";

-- acquire (new epoch in the same statement)
UPDATE "leasehold_leases" SET holder = $1, epoch = epoch + 1, acquired_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 15000000 WHERE name = $2 AND (holder = '' OR holder = $3 OR expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)) RETURNING epoch
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "global/billing", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- renew one lease
UPDATE "leasehold_leases" SET renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 15000000 WHERE holder = $1 AND name = $2 AND epoch = 7 AND expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- renew three leases in one statement
UPDATE "leasehold_leases" SET renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT), expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) + 15000000 WHERE holder = $1 AND name IN ($2, $3, $4) AND epoch = CASE name WHEN $5 THEN 7 WHEN $6 THEN 3 WHEN $7 THEN 12 END AND expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- release one lease
UPDATE "leasehold_leases" SET holder = '', expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) WHERE holder = $1 AND name = $2 AND epoch = 7
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- release three leases
UPDATE "leasehold_leases" SET holder = '', expires_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) WHERE holder = $1 AND name IN ($2, $3, $4) AND epoch = CASE name WHEN $5 THEN 7 WHEN $6 THEN 3 WHEN $7 THEN 12 END
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- set a term's data (a member's acknowledged generation)
UPDATE "leasehold_leases" SET data = $1 WHERE holder = $2 AND name = $3 AND epoch = 7 AND expires_at_us >= CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT)
-- args: "42", "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- publish a pool's next generation (compare-and-set)
UPDATE "leasehold_leases" SET epoch = epoch + 1, data = $1, renewed_at_us = CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) WHERE name = $2 AND holder = '' AND epoch = 41
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members
DELETE FROM "leasehold_leases" WHERE name >= $1 AND name < $2 AND expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AND (holder = '' OR expires_at_us < CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) - 150000000)
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- read leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us FROM "leasehold_leases" WHERE name IN ($1, $2)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us FROM "leasehold_leases" ORDER BY name;

-- list leases by prefix
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us FROM "leasehold_leases" WHERE name >= $1 AND name < $2 ORDER BY name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us;

-- fencing check inside the caller's transaction
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT) AS now_us FROM "leasehold_leases" WHERE name = $1 FOR SHARE
-- args: "global/billing";

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

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM "leasehold_schema_migrations";

-- migration lock
SET LOCAL lock_timeout = 60000;

-- migration lock
SELECT pg_advisory_xact_lock(2070517655109335331);

