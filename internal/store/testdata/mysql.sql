-- insert the lease row if absent
INSERT INTO `leasehold_leases` (name) VALUES (?) ON DUPLICATE KEY UPDATE name = name
-- args: "global/billing";

-- acquire (new epoch in the same statement)
UPDATE `leasehold_leases` SET holder = ?, epoch = epoch + 1, acquired_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 15000000 WHERE name = ? AND (holder = '' OR holder = ? OR expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "global/billing", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- read the acquired epoch back (in the acquire's transaction)
SELECT epoch FROM `leasehold_leases` WHERE name = ?
-- args: "global/billing";

-- renew one lease
UPDATE `leasehold_leases` SET renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 15000000 WHERE holder = ? AND name = ? AND epoch = 7 AND expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- renew three leases in one statement
UPDATE `leasehold_leases` SET renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 15000000 WHERE holder = ? AND name IN (?, ?, ?) AND epoch = CASE name WHEN ? THEN 7 WHEN ? THEN 3 WHEN ? THEN 12 END AND expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- release one lease
UPDATE `leasehold_leases` SET holder = '', expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) WHERE holder = ? AND name = ? AND epoch = 7
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- release three leases
UPDATE `leasehold_leases` SET holder = '', expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) WHERE holder = ? AND name IN (?, ?, ?) AND epoch = CASE name WHEN ? THEN 7 WHEN ? THEN 3 WHEN ? THEN 12 END
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- set a term's data (a member's acknowledged generation)
UPDATE `leasehold_leases` SET data = ? WHERE holder = ? AND name = ? AND epoch = 7 AND expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
-- args: "42", "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- publish a pool's next generation (compare-and-set)
UPDATE `leasehold_leases` SET epoch = epoch + 1, data = ?, renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) WHERE name = ? AND holder = '' AND epoch = 41
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members
DELETE FROM `leasehold_leases` WHERE name >= ? AND name < ? AND expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AND (holder = '' OR expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000)
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- read leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us FROM `leasehold_leases` WHERE name IN (?, ?)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us FROM `leasehold_leases` ORDER BY name;

-- list leases by prefix
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us FROM `leasehold_leases` WHERE name >= ? AND name < ? ORDER BY name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us;

-- fencing check inside the caller's transaction
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us FROM `leasehold_leases` WHERE name = ? LOCK IN SHARE MODE
-- args: "global/billing";

-- create the version table
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;

-- migration 1: create the lease table
CREATE TABLE IF NOT EXISTS `leasehold_leases` (name VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name)) ENGINE=InnoDB;

-- record migration 1
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (1, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "create the lease table";

-- migration 2: add the data column for pool generations and member acknowledgements
ALTER TABLE `leasehold_leases` ADD COLUMN data MEDIUMTEXT NULL;

-- record migration 2
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (2, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "add the data column for pool generations and member acknowledgements";

-- migration 3: rename pool rows to keys that cannot collide
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, LENGTH(name) - 16), '|generation') WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH(name) > 16 AND SUBSTR(name, LENGTH(name) - 10, 11) = '/generation';

-- migration 3: rename pool rows to keys that cannot collide
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 13), '|member|', SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) + 1, LENGTH(name) - (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1))) WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) > 13 AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) < LENGTH(name) AND SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 7, 8) = '/member/';

-- migration 3: rename pool rows to keys that cannot collide
INSERT IGNORE INTO `leasehold_leases` (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM `leasehold_leases` AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}';

-- record migration 3
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (3, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "rename pool rows to keys that cannot collide";

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM `leasehold_schema_migrations`;

-- migration lock
SELECT GET_LOCK(?, ?)
-- args: "leasehold:migrate:leasehold_@app", 60;

-- migration lock
SELECT RELEASE_LOCK(?)
-- args: "leasehold:migrate:leasehold_@app";

