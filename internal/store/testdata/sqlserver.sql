-- insert the lease row if absent
INSERT INTO [leasehold_leases] (name) SELECT @p1 WHERE NOT EXISTS (SELECT 1 FROM [leasehold_leases] WITH (UPDLOCK, HOLDLOCK) WHERE name = @p2)
-- args: "global/billing", "global/billing";

-- acquire (new epoch in the same statement)
UPDATE [leasehold_leases] SET holder = @p1, epoch = epoch + 1, acquired_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 15000000 OUTPUT inserted.epoch WHERE name = @p2 AND (holder = '' OR holder = @p3 OR expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()))
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "global/billing", "node-a/eu-1/0123456789abcdef0123456789abcdef";

-- renew one lease
UPDATE [leasehold_leases] SET renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 15000000 WHERE holder = @p1 AND name = @p2 AND epoch = 7 AND expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- renew three leases in one statement
UPDATE [leasehold_leases] SET renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()), expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) + 15000000 WHERE holder = @p1 AND name IN (@p2, @p3, @p4) AND epoch = CASE name WHEN @p5 THEN 7 WHEN @p6 THEN 3 WHEN @p7 THEN 12 END AND expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- release one lease
UPDATE [leasehold_leases] SET holder = '', expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE holder = @p1 AND name = @p2 AND epoch = 7
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- release three leases
UPDATE [leasehold_leases] SET holder = '', expires_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE holder = @p1 AND name IN (@p2, @p3, @p4) AND epoch = CASE name WHEN @p5 THEN 7 WHEN @p6 THEN 3 WHEN @p7 THEN 12 END
-- args: "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports", "global/billing", "global/outbox", "cluster/eu-1/reports", "global/billing", "global/outbox";

-- set a term's data (a member's acknowledged generation)
UPDATE [leasehold_leases] SET data = @p1 WHERE holder = @p2 AND name = @p3 AND epoch = 7 AND expires_at_us >= DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME())
-- args: "42", "node-a/eu-1/0123456789abcdef0123456789abcdef", "cluster/eu-1/reports";

-- publish a pool's next generation (compare-and-set)
UPDATE [leasehold_leases] SET epoch = epoch + 1, data = @p1, renewed_at_us = DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) WHERE name = @p2 AND holder = '' AND epoch = 41
-- args: "a1b2,c3d4", "pool|global/orders|generation";

-- prune dead pool members
DELETE FROM [leasehold_leases] WHERE name >= @p1 AND name < @p2 AND expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AND (holder = '' OR expires_at_us < DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) - 150000000)
-- args: "pool|global/orders|member|", "pool|global/orders|member}";

-- read leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us FROM [leasehold_leases] WHERE name IN (@p1, @p2)
-- args: "global/billing", "global/outbox";

-- list all leases
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us FROM [leasehold_leases] ORDER BY name;

-- list leases by prefix
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us FROM [leasehold_leases] WHERE name >= @p1 AND name < @p2 ORDER BY name
-- args: "pool|global/orders|", "pool|global/orders}";

-- database clock
SELECT DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us;

-- fencing check inside the caller's transaction
SELECT name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, COALESCE(data, ''), DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()) AS now_us FROM [leasehold_leases] WITH (HOLDLOCK, ROWLOCK) WHERE name = @p1
-- args: "global/billing";

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

-- current schema version
SELECT COALESCE(MAX(version), 0) FROM [leasehold_schema_migrations];

-- migration lock
DECLARE @r INT; EXEC @r = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 60000; SELECT @r
-- args: "leasehold:migrate:leasehold_";

