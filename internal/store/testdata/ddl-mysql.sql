-- ======== from version 0 ========
-- leasehold coordination schema version 10 for mysql
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS `leasehold_leases` (name VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (1, 'create the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'data') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN data MEDIUMTEXT NULL', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, LENGTH(name) - 16), '|generation') WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH(name) > 16 AND SUBSTR(name, LENGTH(name) - 10, 11) = '/generation';
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 13), '|member|', SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) + 1, LENGTH(name) - (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1))) WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) > 13 AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) < LENGTH(name) AND SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 7, 8) = '/member/';
INSERT IGNORE INTO `leasehold_leases` (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM `leasehold_leases` AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}';
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_sessions` (id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (4, 'create the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'session_id') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN session_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'resign_epoch') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 1 ========
-- leasehold coordination schema for mysql, from version 1 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'data') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN data MEDIUMTEXT NULL', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, LENGTH(name) - 16), '|generation') WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH(name) > 16 AND SUBSTR(name, LENGTH(name) - 10, 11) = '/generation';
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 13), '|member|', SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) + 1, LENGTH(name) - (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1))) WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) > 13 AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) < LENGTH(name) AND SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 7, 8) = '/member/';
INSERT IGNORE INTO `leasehold_leases` (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM `leasehold_leases` AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}';
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_sessions` (id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (4, 'create the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'session_id') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN session_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'resign_epoch') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 2 ========
-- leasehold coordination schema for mysql, from version 2 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, LENGTH(name) - 16), '|generation') WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LENGTH(name) > 16 AND SUBSTR(name, LENGTH(name) - 10, 11) = '/generation';
UPDATE IGNORE `leasehold_leases` SET name = CONCAT('pool|', SUBSTR(name, 6, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 13), '|member|', SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) + 1, LENGTH(name) - (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1))) WHERE name >= 'pool/' AND name < 'pool0' AND holder <> 'leasehold:renamed' AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) > 13 AND (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) < LENGTH(name) AND SUBSTR(name, (LENGTH(name) - LOCATE('/', REVERSE(name)) + 1) - 7, 8) = '/member/';
INSERT IGNORE INTO `leasehold_leases` (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM `leasehold_leases` AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}';
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_sessions` (id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (4, 'create the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'session_id') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN session_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'resign_epoch') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 3 ========
-- leasehold coordination schema for mysql, from version 3 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS `leasehold_sessions` (id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (4, 'create the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'session_id') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN session_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'resign_epoch') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 4 ========
-- leasehold coordination schema for mysql, from version 4 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'session_id') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN session_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'resign_epoch') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 5 ========
-- leasehold coordination schema for mysql, from version 5 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_leases' AND column_name = 'resign_epoch') = 0, 'ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 6 ========
-- leasehold coordination schema for mysql, from version 6 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'notice') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 7 ========
-- leasehold coordination schema for mysql, from version 7 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, 'create the incarnation table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 8 ========
-- leasehold coordination schema for mysql, from version 8 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'incarnation') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 9 ========
-- leasehold coordination schema for mysql, from version 9 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;
SET @leasehold_ddl = IF((SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'leasehold_sessions' AND column_name = 'wake_addrs') = 0, 'ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '''', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT ''''', 'DO 0');
PREPARE leasehold_ddl FROM @leasehold_ddl;
EXECUTE leasehold_ddl;
DEALLOCATE PREPARE leasehold_ddl;
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE version = version;

-- ======== from version 10 ========
-- leasehold coordination schema for mysql, from version 10 to 10
-- Every statement is safe to apply again.
CREATE TABLE IF NOT EXISTS `leasehold_schema_migrations` (version INT NOT NULL, description VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version)) ENGINE=InnoDB;

