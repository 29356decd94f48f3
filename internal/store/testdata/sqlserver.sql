-- start a session
INSERT INTO [leasehold_sessions] (id, holder, created_at_us, renewed_at_us, expires_at_us, incarnation) VALUES (@p1, @p2, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 15000000, CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- start a session that advertises its peer wake-ups
INSERT INTO [leasehold_sessions] (id, holder, created_at_us, renewed_at_us, expires_at_us, wake_addrs, wake_key, incarnation) VALUES (@p1, @p2, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 15000000, @p3, @p4, CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "4286f278f60e;10.0.0.5:40123,127.0.0.1:40123", "89d8f755dfe70476693f3c7c2df36e55fd028134a29d108723b3863dbb794569";

-- read the peer wake-up adverts of the sessions live or expired less than grace ago
SELECT wake_addrs, wake_key FROM [leasehold_sessions] WHERE wake_key <> '' AND expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 30000000;

-- renew the session: the one statement of a renewal tick
UPDATE [leasehold_sessions] SET renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 15000000 OUTPUT inserted.notice WHERE id = @p1 AND expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AND incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read the session
SELECT renewed_at_us, expires_at_us, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us FROM [leasehold_sessions] WHERE id = @p1
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- end the session
DELETE FROM [leasehold_sessions] WHERE id = @p1
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- list the sessions (status pages)
SELECT id, holder, renewed_at_us, expires_at_us, wake_addrs, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us FROM [leasehold_sessions] ORDER BY holder, id;

-- prune sessions expired long ago
DELETE FROM [leasehold_sessions] WHERE expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000;

-- insert lease rows if absent
UPDATE [leasehold_leases] SET expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE name IN (@p1, @p2) AND holder = ''; INSERT INTO [leasehold_leases] (name, expires_at_us) SELECT v.name, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) FROM (VALUES (@p3), (@p4)) AS v(name) WHERE NOT EXISTS (SELECT 1 FROM [leasehold_leases] WITH (UPDLOCK, HOLDLOCK) WHERE [leasehold_leases].name = v.name)
-- args: "global/billing", "global/outbox", "global/billing", "global/outbox";

-- acquire, first: lock the named rows, in name order
SELECT name FROM [leasehold_leases] WITH (UPDLOCK, ROWLOCK) WHERE name IN (@p1, @p2) ORDER BY name
-- args: "global/billing", "global/outbox";

-- acquire (new epochs in the same statement)
UPDATE [leasehold_leases] SET holder = @p1, session_id = @p2, epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) END + 1, acquired_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), expires_at_us = 253402300799999999, resign_epoch = 0, prefer_holder = '', prefer_until_us = 0 OUTPUT inserted.name, inserted.epoch WHERE name IN (@p3, @p4) AND (NOT ([leasehold_leases].holder <> '' AND (([leasehold_leases].session_id = '' AND [leasehold_leases].expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())) OR EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = [leasehold_leases].session_id AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())))) OR [leasehold_leases].session_id = @p5) AND EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = @p6 AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())) AND ([leasehold_leases].prefer_until_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) OR [leasehold_leases].prefer_holder IN (@p7, @p8, @p9)) AND EXISTS (SELECT 1 FROM [leasehold_incarnation] i WHERE i.id = 1 AND i.incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) AND i.hold_until_us <= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "node-a/eu-1/0123456789abcdef0123456789abcdef", "node-a", "0123456789abcdef0123456789abcdef";

-- release one lease
UPDATE [leasehold_leases] SET holder = '', session_id = '', expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE session_id = @p1 AND ((name = @p2 AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports";

-- record a resign request for one term, with a preferred holder
UPDATE [leasehold_leases] SET resign_epoch = 7, prefer_holder = @p1, prefer_until_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 30000000 WHERE name = @p2 AND epoch = 7 AND session_id = @p3
-- args: "node-b", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- record a resign request for one term, without a preference
UPDATE [leasehold_leases] SET resign_epoch = 7, prefer_holder = @p1, prefer_until_us = 0 WHERE name = @p2 AND epoch = 7 AND session_id = @p3
-- args: "", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- notify a session of a resign request
UPDATE [leasehold_sessions] SET notice = notice + 1 WHERE id = @p1
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- read a session's pending resign requests
SELECT name, epoch FROM [leasehold_leases] WHERE name IN (@p1, @p2) AND session_id = @p3 AND resign_epoch = epoch AND resign_epoch > 0
-- args: "global/billing", "global/outbox", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- release three leases
UPDATE [leasehold_leases] SET holder = '', session_id = '', expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE session_id = @p1 AND ((name = @p2 AND epoch = 7) OR (name = @p3 AND epoch = 3) OR (name = @p4 AND epoch = 12))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- set a term's data (a member's acknowledged generation)
UPDATE [leasehold_leases] SET data = @p1 WHERE name = @p2 AND epoch = 7 AND session_id = @p3 AND EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = @p4 AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "42", "cluster/eu-1/reports", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- publish a pool's next generation (compare-and-set)
UPDATE [leasehold_leases] SET epoch = CASE WHEN epoch >= COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) THEN epoch ELSE COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) END + 1, data = @p1, renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE name = @p2 AND holder = '' AND epoch = 41 AND EXISTS (SELECT 1 FROM [leasehold_incarnation] i WHERE i.id = 1 AND i.incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) AND i.hold_until_us <= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members, 1 of 2: lock those that look dead
SELECT name FROM [leasehold_leases] WITH (UPDLOCK, ROWLOCK) WHERE name >= @p1 AND name < @p2 AND (([leasehold_leases].session_id = '' AND [leasehold_leases].expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000) OR ([leasehold_leases].session_id <> '' AND NOT EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = [leasehold_leases].session_id AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000))) ORDER BY name
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- prune dead pool members, 2 of 2: delete those of them still dead
DELETE FROM [leasehold_leases] WHERE name IN (@p1, @p2) AND (([leasehold_leases].session_id = '' AND [leasehold_leases].expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000) OR ([leasehold_leases].session_id <> '' AND NOT EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = [leasehold_leases].session_id AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000)))
-- args: "global/billing", "global/outbox";

-- keyed locks: lock floor rows (or lock rows), with their epochs
SELECT name, epoch FROM [leasehold_leases] WITH (UPDLOCK, ROWLOCK) WHERE name IN (@p1, @p2) ORDER BY name
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks: create lock rows (or floor rows) at their floors' epochs
INSERT INTO [leasehold_leases] (name, epoch, expires_at_us) VALUES (@p1, 12, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())), (@p2, 7, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: raise the floors to the epochs released
UPDATE [leasehold_leases] SET epoch = CASE WHEN name = @p1 AND epoch < 12 THEN 12 WHEN name = @p2 AND epoch < 7 THEN 7 ELSE epoch END WHERE name IN (@p3, @p4)
-- args: "lockfloor|global/accounts|3", "lockfloor|global/accounts|9", "lockfloor|global/accounts|3", "lockfloor|global/accounts|9";

-- keyed locks, release: delete the rows of the terms
DELETE FROM [leasehold_leases] WHERE session_id = @p1 AND ((name = @p2 AND epoch = 12) OR (name = @p3 AND epoch = 7))
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "lock|global/accounts|42", "lock|global/accounts|7";

-- keyed locks, prune: read up to 500 dead lock rows
SELECT TOP (500) name, epoch FROM [leasehold_leases] WHERE name >= @p1 AND name < @p2 AND (([leasehold_leases].session_id = '' AND [leasehold_leases].expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000) OR ([leasehold_leases].session_id <> '' AND NOT EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = [leasehold_leases].session_id AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000))) ORDER BY name
-- args: "lock|global/accounts|", "lock|global/accounts}";

-- keyed locks, prune: lock them, in name order
SELECT name FROM [leasehold_leases] WITH (UPDLOCK, ROWLOCK) WHERE name IN (@p1, @p2) ORDER BY name
-- args: "lock|global/accounts|42", "lock|global/accounts|7";

-- keyed locks, prune: delete those of them still dead at the epoch read
DELETE FROM [leasehold_leases] WHERE ((name = @p1 AND epoch = 12) OR (name = @p2 AND epoch = 7)) AND (([leasehold_leases].session_id = '' AND [leasehold_leases].expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000) OR ([leasehold_leases].session_id <> '' AND NOT EXISTS (SELECT 1 FROM [leasehold_sessions] s WHERE s.id = [leasehold_leases].session_id AND s.expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000)))
-- args: "lock|global/accounts|42", "lock|global/accounts|7";

-- read leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) THEN i.hold_until_us ELSE -1 END FROM [leasehold_incarnation] i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) AS epoch_floor FROM [leasehold_leases] l LEFT JOIN [leasehold_sessions] s ON s.id = l.session_id WHERE l.name IN (@p1, @p2)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) THEN i.hold_until_us ELSE -1 END FROM [leasehold_incarnation] i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) AS epoch_floor FROM [leasehold_leases] l LEFT JOIN [leasehold_sessions] s ON s.id = l.session_id ORDER BY l.name;

-- list leases by prefix
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE(s.renewed_at_us, l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE(s.expires_at_us, 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) THEN i.hold_until_us ELSE -1 END FROM [leasehold_incarnation] i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) AS epoch_floor FROM [leasehold_leases] l LEFT JOIN [leasehold_sessions] s ON s.id = l.session_id WHERE l.name >= @p1 AND l.name < @p2 ORDER BY l.name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us;

-- fencing check inside the caller's transaction
SELECT l.name, l.holder, l.session_id, l.epoch, l.acquired_at_us, CASE WHEN l.session_id = '' THEN l.renewed_at_us ELSE COALESCE((SELECT s.renewed_at_us FROM [leasehold_sessions] s WHERE s.id = l.session_id), l.renewed_at_us) END, CASE WHEN l.session_id = '' THEN l.expires_at_us ELSE COALESCE((SELECT s.expires_at_us FROM [leasehold_sessions] s WHERE s.id = l.session_id), 0) END, COALESCE(l.data, ''), l.resign_epoch, l.prefer_holder, l.prefer_until_us, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us, COALESCE((SELECT CASE WHEN i.incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) THEN i.hold_until_us ELSE -1 END FROM [leasehold_incarnation] i WHERE i.id = 1), -1) AS hold_until_us, COALESCE((SELECT i.epoch_floor FROM [leasehold_incarnation] i WHERE i.id = 1), 0) AS epoch_floor FROM [leasehold_leases] l WITH (HOLDLOCK, ROWLOCK) WHERE l.name = @p1
-- args: "global/billing";

-- partitioned query: member 1 of 3 by an integer key (Assignment.Scope)
SELECT * FROM orders WHERE (([orders].[id] % 3) + 3) % 3 = 1;

-- partitioned query: partitions 2, 5 and 6 of 8 by an integer key
SELECT * FROM orders WHERE (([orders].[id] % 8) + 8) % 8 IN (2, 5, 6);

-- partitioned query: member 1 of 3 by a bucket column (Assignment.BucketScope)
SELECT * FROM orders WHERE state = @p1 AND ([bucket] >= 1365 AND [bucket] < 2730)
-- args: "pending";

-- partitioned query: two ranges of buckets
SELECT * FROM orders WHERE (([bucket] >= 0 AND [bucket] < 512) OR ([bucket] >= 1024 AND [bucket] < 1536));

-- failover: create the incarnation row unless it exists
INSERT INTO [leasehold_incarnation] (id, incarnation, previous, adopted_at_us, hold_until_us, epoch_floor) SELECT 1, CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)), '', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), 0, 0 WHERE NOT EXISTS (SELECT 1 FROM [leasehold_incarnation] WITH (UPDLOCK, HOLDLOCK) WHERE id = 1);

-- failover: adopt the incarnation answering, with a hold-off and a new epoch floor
UPDATE [leasehold_incarnation] SET hold_until_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + CASE WHEN COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM [leasehold_sessions] s), 0) > 15000000 THEN COALESCE((SELECT MAX(s.expires_at_us - s.renewed_at_us) FROM [leasehold_sessions] s), 0) ELSE 15000000 END, epoch_floor = CASE WHEN epoch_floor >= COALESCE((SELECT MAX(l.epoch) FROM [leasehold_leases] l), 0) THEN epoch_floor ELSE COALESCE((SELECT MAX(l.epoch) FROM [leasehold_leases] l), 0) END + 4294967296, previous = incarnation, adopted_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) WHERE id = 1 AND incarnation <> CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255));

-- failover: move a live session to the incarnation answering
UPDATE [leasehold_sessions] SET incarnation = CAST(COALESCE(@@SERVERNAME, N'') AS NVARCHAR(255)) WHERE id = @p1 AND expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- failover: the terms the rows show a session holding
SELECT name, epoch FROM [leasehold_leases] WHERE session_id = @p1 AND holder <> ''
-- args: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

-- create the version table
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));

-- migration 1: create the lease table
IF OBJECT_ID(N'leasehold_leases', N'U') IS NULL CREATE TABLE [leasehold_leases] (name NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name));

-- record migration 1
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (1, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "create the lease table";

-- migration 2: add the data column for pool generations and member acknowledgements
IF COL_LENGTH(N'leasehold_leases', N'data') IS NULL ALTER TABLE [leasehold_leases] ADD data NVARCHAR(MAX) NOT NULL DEFAULT N'';

-- record migration 2
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (2, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "add the data column for pool generations and member acknowledgements";

-- migration 3: rename pool rows to keys that cannot collide
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation' WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LEN([leasehold_leases].name) > 16 AND SUBSTRING([leasehold_leases].name, LEN([leasehold_leases].name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation');

-- migration 3: rename pool rows to keys that cannot collide
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)) WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) > 13 AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) < LEN([leasehold_leases].name) AND SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)));

-- migration 3: rename pool rows to keys that cannot collide
INSERT INTO [leasehold_leases] (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM [leasehold_leases] AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = REPLACE(renamed.name, '|', '/'));

-- record migration 3
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (3, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "rename pool rows to keys that cannot collide";

-- migration 4: create the session table
IF OBJECT_ID(N'leasehold_sessions', N'U') IS NULL CREATE TABLE [leasehold_sessions] (id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));

-- record migration 4
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (4, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "create the session table";

-- migration 5: add the session column to the lease table
IF COL_LENGTH(N'leasehold_leases', N'session_id') IS NULL ALTER TABLE [leasehold_leases] ADD session_id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';

-- record migration 5
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (5, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "add the session column to the lease table";

-- migration 6: add the resign request columns to the lease table
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;

-- record migration 6
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "add the resign request columns to the lease table";

-- migration 7: add the notice counter to the session table
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;

-- record migration 7
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "add the notice counter to the session table";

-- migration 8: create the incarnation table
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));

-- record migration 8
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "create the incarnation table";

-- migration 9: add the incarnation column to the session table
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';

-- record migration 9
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "add the incarnation column to the session table";

-- migration 10: add the peer wake-up columns to the session table
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';

-- record migration 10
INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, @p1, DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "add the peer wake-up columns to the session table";

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM [leasehold_schema_migrations];

-- migration lock
DECLARE @r INT; EXEC @r = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 60000; SELECT @r
-- args: "leasehold:migrate:leasehold_";

