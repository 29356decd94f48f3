-- ======== from version 0 ========
-- leasehold coordination schema version 10 for sqlserver
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF OBJECT_ID(N'leasehold_leases', N'U') IS NULL CREATE TABLE [leasehold_leases] (name NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', epoch BIGINT NOT NULL DEFAULT 0, acquired_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 1) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (1, 'create the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'data') IS NULL ALTER TABLE [leasehold_leases] ADD data NVARCHAR(MAX) NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 2) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation' WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LEN([leasehold_leases].name) > 16 AND SUBSTRING([leasehold_leases].name, LEN([leasehold_leases].name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation');
GO
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)) WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) > 13 AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) < LEN([leasehold_leases].name) AND SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)));
GO
INSERT INTO [leasehold_leases] (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM [leasehold_leases] AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = REPLACE(renamed.name, '|', '/'));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 3) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_sessions', N'U') IS NULL CREATE TABLE [leasehold_sessions] (id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 4) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (4, 'create the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'session_id') IS NULL ALTER TABLE [leasehold_leases] ADD session_id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 5) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 6) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 1 ========
-- leasehold coordination schema for sqlserver, from version 1 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF COL_LENGTH(N'leasehold_leases', N'data') IS NULL ALTER TABLE [leasehold_leases] ADD data NVARCHAR(MAX) NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 2) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (2, 'add the data column for pool generations and member acknowledgements', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation' WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LEN([leasehold_leases].name) > 16 AND SUBSTRING([leasehold_leases].name, LEN([leasehold_leases].name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation');
GO
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)) WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) > 13 AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) < LEN([leasehold_leases].name) AND SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)));
GO
INSERT INTO [leasehold_leases] (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM [leasehold_leases] AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = REPLACE(renamed.name, '|', '/'));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 3) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_sessions', N'U') IS NULL CREATE TABLE [leasehold_sessions] (id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 4) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (4, 'create the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'session_id') IS NULL ALTER TABLE [leasehold_leases] ADD session_id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 5) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 6) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 2 ========
-- leasehold coordination schema for sqlserver, from version 2 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation' WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND acquired_at_us = 0 AND LEN([leasehold_leases].name) > 16 AND SUBSTRING([leasehold_leases].name, LEN([leasehold_leases].name) - 10, 11) = '/generation' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, LEN([leasehold_leases].name) - 16) + '|generation');
GO
UPDATE [leasehold_leases] SET name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)) WHERE [leasehold_leases].name >= 'pool/' AND [leasehold_leases].name < 'pool0' AND holder <> 'leasehold:renamed' AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) > 13 AND (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) < LEN([leasehold_leases].name) AND SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 7, 8) = '/member/' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = 'pool|' + SUBSTRING([leasehold_leases].name, 6, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) - 13) + '|member|' + SUBSTRING([leasehold_leases].name, (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1) + 1, LEN([leasehold_leases].name) - (LEN([leasehold_leases].name) - CHARINDEX('/', REVERSE([leasehold_leases].name)) + 1)));
GO
INSERT INTO [leasehold_leases] (name, holder, epoch, acquired_at_us, renewed_at_us, expires_at_us, data) SELECT REPLACE(renamed.name, '|', '/'), 'leasehold:renamed', renamed.epoch, renamed.acquired_at_us, renamed.renewed_at_us, 253402300799999999, renamed.data FROM [leasehold_leases] AS renamed WHERE renamed.name >= 'pool|' AND renamed.name < 'pool}' AND NOT EXISTS (SELECT 1 FROM [leasehold_leases] AS taken WHERE taken.name = REPLACE(renamed.name, '|', '/'));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 3) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (3, 'rename pool rows to keys that cannot collide', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_sessions', N'U') IS NULL CREATE TABLE [leasehold_sessions] (id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 4) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (4, 'create the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'session_id') IS NULL ALTER TABLE [leasehold_leases] ADD session_id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 5) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 6) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 3 ========
-- leasehold coordination schema for sqlserver, from version 3 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF OBJECT_ID(N'leasehold_sessions', N'U') IS NULL CREATE TABLE [leasehold_sessions] (id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL, holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', created_at_us BIGINT NOT NULL DEFAULT 0, renewed_at_us BIGINT NOT NULL DEFAULT 0, expires_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 4) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (4, 'create the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'session_id') IS NULL ALTER TABLE [leasehold_leases] ADD session_id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 5) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 6) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 4 ========
-- leasehold coordination schema for sqlserver, from version 4 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF COL_LENGTH(N'leasehold_leases', N'session_id') IS NULL ALTER TABLE [leasehold_leases] ADD session_id NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 5) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (5, 'add the session column to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 6) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 5 ========
-- leasehold coordination schema for sqlserver, from version 5 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF COL_LENGTH(N'leasehold_leases', N'resign_epoch') IS NULL ALTER TABLE [leasehold_leases] ADD resign_epoch BIGINT NOT NULL DEFAULT 0, prefer_holder NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', prefer_until_us BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 6) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (6, 'add the resign request columns to the lease table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 6 ========
-- leasehold coordination schema for sqlserver, from version 6 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF COL_LENGTH(N'leasehold_sessions', N'notice') IS NULL ALTER TABLE [leasehold_sessions] ADD notice BIGINT NOT NULL DEFAULT 0;
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 7) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (7, 'add the notice counter to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 7 ========
-- leasehold coordination schema for sqlserver, from version 7 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF OBJECT_ID(N'leasehold_incarnation', N'U') IS NULL CREATE TABLE [leasehold_incarnation] (id INT NOT NULL, incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', previous NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', adopted_at_us BIGINT NOT NULL DEFAULT 0, hold_until_us BIGINT NOT NULL DEFAULT 0, epoch_floor BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id));
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 8) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (8, 'create the incarnation table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 8 ========
-- leasehold coordination schema for sqlserver, from version 8 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF COL_LENGTH(N'leasehold_sessions', N'incarnation') IS NULL ALTER TABLE [leasehold_sessions] ADD incarnation NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 9) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (9, 'add the incarnation column to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 9 ========
-- leasehold coordination schema for sqlserver, from version 9 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO
IF COL_LENGTH(N'leasehold_sessions', N'wake_addrs') IS NULL ALTER TABLE [leasehold_sessions] ADD wake_addrs NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'', wake_key NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'';
GO
IF NOT EXISTS (SELECT 1 FROM [leasehold_schema_migrations] WHERE version = 10) INSERT INTO [leasehold_schema_migrations] (version, description, applied_at_us) VALUES (10, 'add the peer wake-up columns to the session table', DATEDIFF_BIG(MICROSECOND, '19700101', SYSUTCDATETIME()));
GO

-- ======== from version 10 ========
-- leasehold coordination schema for sqlserver, from version 10 to 10
-- Every statement is safe to apply again.
IF OBJECT_ID(N'leasehold_schema_migrations', N'U') IS NULL CREATE TABLE [leasehold_schema_migrations] (version INT NOT NULL, description NVARCHAR(255) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT '', applied_at_us BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (version));
GO

