-- start a session
INSERT INTO `leasehold_sessions` (id, holder, created_at_us, renewed_at_us, expires_at_us, incarnation) VALUES (?, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 15000000, IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- start a session that advertises its peer wake-ups
INSERT INTO `leasehold_sessions` (id, holder, created_at_us, renewed_at_us, expires_at_us, wake_addrs, wake_key, incarnation) VALUES (?, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 15000000, ?, ?, IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "4286f278f60e;10.0.0.5:40123,127.0.0.1:40123", "89d8f755dfe70476693f3c7c2df36e55fd028134a29d108723b3863dbb794569";

-- read the peer wake-up adverts of the sessions live or expired less than grace ago
SELECT wake_addrs, wake_key FROM `leasehold_sessions` WHERE wake_key <> '' AND expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 30000000;

-- renew the session: the one statement of a renewal tick
UPDATE `leasehold_sessions` SET renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 15000000, notice = LAST_INSERT_ID(notice) WHERE id = ? AND expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AND incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read the session
SELECT renewed_at_us, expires_at_us, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us FROM `leasehold_sessions` WHERE id = ?
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- end the session
DELETE FROM `leasehold_sessions` WHERE id = ?
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- list the sessions (status pages)
SELECT id, holder, renewed_at_us, expires_at_us, wake_addrs, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us FROM `leasehold_sessions` ORDER BY holder, id;

-- prune sessions expired long ago
DELETE FROM `leasehold_sessions` WHERE expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000;

-- insert lease rows if absent
INSERT INTO `leasehold_leases` (name, expires_at_us) VALUES (?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))), (?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE expires_at_us = IF(holder = '', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us)
-- args: "global/billing", "global/outbox";

-- acquire, first: lock the named rows, in name order
SELECT name FROM `leasehold_leases` WHERE name IN (?, ?) ORDER BY name FOR UPDATE
-- args: "global/billing", "global/outbox";

-- acquire: lock the leases this session can take, with their epochs
SELECT name, epoch FROM `leasehold_leases` WHERE name IN (?, ?) AND (NOT (`leasehold_leases`.holder <> '' AND ((`leasehold_leases`.session_id = '' AND `leasehold_leases`.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) OR EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = `leasehold_leases`.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))) OR `leasehold_leases`.session_id = ?) AND EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = ? AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) AND (`leasehold_leases`.prefer_until_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) OR `leasehold_leases`.prefer_holder IN (?, ?, ?)) AND EXISTS (SELECT 1 FROM `leasehold_incarnation` i WHERE i.id = 1 AND i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) AND i.hold_until_us <= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) FOR UPDATE
-- args: "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "node-a", "0123456789abcdef0123456789abcdef";

-- acquire: new terms (new epochs) of exactly those
UPDATE `leasehold_leases` SET holder = ?, session_id = ?, epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) END + 1, acquired_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us = 253402300799999999, resign_epoch = 0, prefer_holder = '', prefer_until_us = 0 WHERE ((name = ? AND epoch = 3) OR (name = ? AND epoch = 12))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "global/billing", "global/outbox";

-- acquire: the epochs of those new terms, above the incarnation's floor
SELECT name, epoch FROM `leasehold_leases` WHERE name IN (?, ?) AND session_id = ?
-- args: "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- release one lease
UPDATE `leasehold_leases` SET holder = '', session_id = '', expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) WHERE session_id = ? AND ((name = ? AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports";

-- record a resign request for one term, with a preferred holder
UPDATE `leasehold_leases` SET resign_epoch = 7, prefer_holder = ?, prefer_until_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + 30000000 WHERE name = ? AND epoch = 7 AND session_id = ?
-- args: "node-b", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- record a resign request for one term, without a preference
UPDATE `leasehold_leases` SET resign_epoch = 7, prefer_holder = ?, prefer_until_us = 0 WHERE name = ? AND epoch = 7 AND session_id = ?
-- args: "", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- notify a session of a resign request
UPDATE `leasehold_sessions` SET notice = notice + 1 WHERE id = ?
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read a session's pending resign requests
SELECT name, epoch FROM `leasehold_leases` WHERE name IN (?, ?) AND session_id = ? AND resign_epoch = epoch AND resign_epoch > 0
-- args: "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- release three leases
UPDATE `leasehold_leases` SET holder = '', session_id = '', expires_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) WHERE session_id = ? AND ((name = ? AND epoch = 7) OR (name = ? AND epoch = 3) OR (name = ? AND epoch = 12))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- set a term's data (a member's acknowledged generation)
UPDATE `leasehold_leases` SET data = ? WHERE name = ? AND epoch = 7 AND session_id = ? AND EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = ? AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "42", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- publish a pool's next generation (compare-and-set)
UPDATE `leasehold_leases` SET epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) END + 1, data = ?, renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) WHERE name = ? AND holder = '' AND epoch = 41 AND EXISTS (SELECT 1 FROM `leasehold_incarnation` i WHERE i.id = 1 AND i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) AND i.hold_until_us <= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members, 1 of 2: lock those that look dead
SELECT name FROM `leasehold_leases` WHERE name >= ? AND name < ? AND ((`leasehold_leases`.session_id = '' AND `leasehold_leases`.expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000) OR (`leasehold_leases`.session_id <> '' AND NOT EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = `leasehold_leases`.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000))) ORDER BY name FOR UPDATE
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- prune dead pool members, 2 of 2: delete those of them still dead
DELETE FROM `leasehold_leases` WHERE name IN (?, ?) AND ((`leasehold_leases`.session_id = '' AND `leasehold_leases`.expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000) OR (`leasehold_leases`.session_id <> '' AND NOT EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = `leasehold_leases`.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000)))
-- args: "global/billing", "global/outbox";

-- keyed locks: lock floor rows (or lock rows), with their epochs
SELECT name, epoch FROM `leasehold_leases` WHERE name IN (?, ?) ORDER BY name FOR UPDATE
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks: create lock rows (or floor rows) at their floors' epochs
INSERT INTO `leasehold_leases` (name, epoch, expires_at_us) VALUES (?, 12, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))), (?, 7, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: raise the floors to the epochs released
UPDATE `leasehold_leases` SET epoch = CASE WHEN name = ? AND epoch < 12 THEN 12 WHEN name = ? AND epoch < 7 THEN 7 ELSE epoch END WHERE name IN (?, ?)
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9", "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: delete the rows of the terms
DELETE FROM `leasehold_leases` WHERE session_id = ? AND ((name = ? AND epoch = 12) OR (name = ? AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "lock|global/accounts|42", "lock|global/accounts|7";

-- keyed locks, prune: read up to 500 dead lock rows
SELECT name, epoch FROM `leasehold_leases` WHERE name >= ? AND name < ? AND ((`leasehold_leases`.session_id = '' AND `leasehold_leases`.expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000) OR (`leasehold_leases`.session_id <> '' AND NOT EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = `leasehold_leases`.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000))) ORDER BY name LIMIT 500
-- args: "lock|global/accounts|", "lock|global/accounts}";

-- keyed locks, prune: lock them, in name order
SELECT name FROM `leasehold_leases` WHERE name IN (?, ?) ORDER BY name FOR UPDATE
-- args: "lock|global/accounts|42", "lock|global/accounts|7";

-- keyed locks, prune: delete those of them still dead at the epoch read
DELETE FROM `leasehold_leases` WHERE ((name = ? AND epoch = 12) OR (name = ? AND epoch = 7)) AND ((`leasehold_leases`.session_id = '' AND `leasehold_leases`.expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000) OR (`leasehold_leases`.session_id <> '' AND NOT EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = `leasehold_leases`.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000)))
-- args: "lock|global/accounts|42", "lock|global/accounts|7";

-- read leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) THEN i.hold_until_us ELSE -1 END FROM `leasehold_incarnation` i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) AS epoch_floor FROM `leasehold_leases` l LEFT JOIN `leasehold_sessions` s ON s.id = l.session_id WHERE l.name IN (?, ?)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) THEN i.hold_until_us ELSE -1 END FROM `leasehold_incarnation` i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) AS epoch_floor FROM `leasehold_leases` l LEFT JOIN `leasehold_sessions` s ON s.id = l.session_id ORDER BY l.name;

-- list leases by prefix
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) THEN i.hold_until_us ELSE -1 END FROM `leasehold_incarnation` i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) AS epoch_floor FROM `leasehold_leases` l LEFT JOIN `leasehold_sessions` s ON s.id = l.session_id WHERE l.name >= ? AND l.name < ? ORDER BY l.name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us;

-- fencing check inside the caller's transaction
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE((SELECT s.renewed_at_us FROM `leasehold_sessions` s WHERE s.id = l.session_id), l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE((SELECT s.expires_at_us FROM `leasehold_sessions` s WHERE s.id = l.session_id), 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) THEN i.hold_until_us ELSE -1 END FROM `leasehold_incarnation` i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) AS epoch_floor FROM `leasehold_leases` l WHERE l.name = ? LOCK IN SHARE MODE
-- args: "global/billing";

-- partitioned query: member 1 of 3 by an integer key (Assignment.Scope)
SELECT * FROM orders WHERE ((`orders`.`id` % 3) + 3) % 3 = 1;

-- partitioned query: partitions 2, 5 and 6 of 8 by an integer key
SELECT * FROM orders WHERE ((`orders`.`id` % 8) + 8) % 8 IN (2, 5, 6);

-- partitioned query: member 1 of 3 by a bucket column (Assignment.BucketScope)
SELECT * FROM orders WHERE state = ? AND (`bucket` >= 1365 AND `bucket` < 2730)
-- args: "pending";

-- partitioned query: two ranges of buckets
SELECT * FROM orders WHERE ((`bucket` >= 0 AND `bucket` < 512) OR (`bucket` >= 1024 AND `bucket` < 1536));

-- failover: create the incarnation row unless it exists
INSERT INTO `leasehold_incarnation` (id, incarnation, previous, adopted_at_us, hold_until_us, epoch_floor) VALUES (1, IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)), '', TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), 0, 0) ON DUPLICATE KEY UPDATE id = id;

-- failover: adopt the incarnation answering, with a hold-off and a new epoch floor
UPDATE `leasehold_incarnation` SET hold_until_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) + CASE WHEN COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM `leasehold_sessions` s), 0) > 15000000 THEN COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM `leasehold_sessions` s), 0) ELSE 15000000 END, epoch_floor = CASE WHEN epoch_floor >= COALESCE((SELECT MAX(l.epoch) FROM `leasehold_leases` l), 0) THEN epoch_floor ELSE COALESCE((SELECT MAX(l.epoch) FROM `leasehold_leases` l), 0) END + 4294967296, previous = incarnation, adopted_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) WHERE id = 1 AND incarnation <> IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR));

-- failover: move a live session to the incarnation answering
UPDATE `leasehold_sessions` SET incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) WHERE id = ? AND expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- failover: the terms the rows show a session holding
SELECT name, epoch FROM `leasehold_leases` WHERE session_id = ? AND holder <> ''
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

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

-- migration 4: create the session table
CREATE TABLE IF NOT EXISTS `leasehold_sessions` (id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;

-- record migration 4
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (4, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "create the session table";

-- migration 5: add the session column to the lease table
ALTER TABLE `leasehold_leases` ADD COLUMN session_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';

-- record migration 5
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (5, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "add the session column to the lease table";

-- migration 6: add the resign request columns to the lease table
ALTER TABLE `leasehold_leases` ADD COLUMN resign_epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN prefer_holder VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', ADD COLUMN prefer_until_us BIGINT NOT NULL DEFAULT 0;

-- record migration 6
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (6, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "add the resign request columns to the lease table";

-- migration 7: add the notice counter to the session table
ALTER TABLE `leasehold_sessions` ADD COLUMN notice BIGINT NOT NULL DEFAULT 0;

-- record migration 7
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (7, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "add the notice counter to the session table";

-- migration 8: create the incarnation table
CREATE TABLE IF NOT EXISTS `leasehold_incarnation` (id INT NOT NULL, incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', previous VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) ENGINE=InnoDB;

-- record migration 8
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (8, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "create the incarnation table";

-- migration 9: add the incarnation column to the session table
ALTER TABLE `leasehold_sessions` ADD COLUMN incarnation VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';

-- record migration 9
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (9, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "add the incarnation column to the session table";

-- migration 10: add the peer wake-up columns to the session table
ALTER TABLE `leasehold_sessions` ADD COLUMN wake_addrs VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', ADD COLUMN wake_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';

-- record migration 10
INSERT INTO `leasehold_schema_migrations` (version, description, applied_at_us) VALUES (10, ?, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "add the peer wake-up columns to the session table";

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM `leasehold_schema_migrations`;

-- migration lock
SELECT GET_LOCK(?, ?)
-- args: "leasehold:migrate:leasehold_@app", 60;

-- migration lock
SELECT RELEASE_LOCK(?)
-- args: "leasehold:migrate:leasehold_@app";

-- start-up: is the server a node of a multi-primary cluster
SHOW VARIABLES LIKE 'wsrep_on';

-- cluster: acquire, after the lock: change the row of each dead session holding a named lease
UPDATE `leasehold_sessions` s JOIN `leasehold_leases` l ON l.session_id = s.id SET s.expires_at_us = s.expires_at_us - 1 WHERE l.name IN (?, ?) AND l.session_id <> ? AND s.expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))
-- args: "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- cluster: fencing check, first: change the lease row
UPDATE `leasehold_leases` SET renewed_at_us = GREATEST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), renewed_at_us + 1) WHERE name = ? AND session_id <> ''
-- args: "global/billing";

-- cluster: fencing check of a pool's generation, first: change the generation row
UPDATE `leasehold_leases` SET renewed_at_us = GREATEST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), renewed_at_us + 1) WHERE name = ? AND holder = ''
-- args: "pool|global/orders|generation";

-- cluster: keyed locks: create lock rows at their floors' epochs, read by the insert
INSERT INTO `leasehold_leases` (name, epoch, expires_at_us) SELECT v.name, f.epoch, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) FROM (SELECT ? AS name, ? AS floor_name UNION ALL SELECT ?, ?) v JOIN `leasehold_leases` f ON f.name = v.floor_name FOR UPDATE
-- args: "lock|global/accounts|42", "lockfloor|global/accounts|3", "lock|global/accounts|7", "lockfloor|global/accounts|9";

-- cluster: keyed locks, release: delete the rows of the terms whose floors are at their epochs
DELETE l FROM `leasehold_leases` l JOIN `leasehold_leases` f ON f.name = CASE l.name WHEN ? THEN ? WHEN ? THEN ? END WHERE l.session_id = ? AND ((l.name = ? AND l.epoch = 12) OR (l.name = ? AND l.epoch = 7)) AND f.epoch >= l.epoch
-- args: "lock|global/accounts|42", "lockfloor|global/accounts|3", "lock|global/accounts|7", "lockfloor|global/accounts|9", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "lock|global/accounts|42", "lock|global/accounts|7";

-- cluster: keyed locks, prune: delete those still dead at the epoch read whose floors are at it
DELETE l FROM `leasehold_leases` l JOIN `leasehold_leases` f ON f.name = CASE l.name WHEN ? THEN ? WHEN ? THEN ? END WHERE ((l.name = ? AND l.epoch = 12) OR (l.name = ? AND l.epoch = 7)) AND ((l.session_id = '' AND l.expires_at_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000) OR (l.session_id <> '' AND NOT EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = l.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) - 150000000))) AND f.epoch >= l.epoch
-- args: "lock|global/accounts|42", "lockfloor|global/accounts|3", "lock|global/accounts|7", "lockfloor|global/accounts|9", "lock|global/accounts|42", "lock|global/accounts|7";

-- cluster: keyed locks, last: is the transaction still open
SELECT @@in_transaction;

-- cluster: acquire, after the lock: start the terms, of the leases still takeable
UPDATE `leasehold_leases` SET holder = ?, session_id = ?, epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM `leasehold_incarnation` i WHERE i.id = 1), 0) END + 1, acquired_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), renewed_at_us = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)), expires_at_us = 253402300799999999, resign_epoch = 0, prefer_holder = '', prefer_until_us = 0 WHERE ((name = ? AND epoch = 3) OR (name = ? AND epoch = 12)) AND (NOT (`leasehold_leases`.holder <> '' AND ((`leasehold_leases`.session_id = '' AND `leasehold_leases`.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) OR EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = `leasehold_leases`.session_id AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))))) OR `leasehold_leases`.session_id = ?) AND EXISTS (SELECT 1 FROM `leasehold_sessions` s WHERE s.id = ? AND s.expires_at_us >= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))) AND (`leasehold_leases`.prefer_until_us < TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) OR `leasehold_leases`.prefer_holder IN (?, ?, ?)) AND EXISTS (SELECT 1 FROM `leasehold_incarnation` i WHERE i.id = 1 AND i.incarnation = IF(@@wsrep_on, 'galera', CAST(@@server_id AS CHAR)) AND i.hold_until_us <= TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "node-a", "0123456789abcdef0123456789abcdef";

