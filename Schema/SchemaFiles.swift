/// The SQL migrations in this folder, embedded in the binary at build time.
public enum SchemaFiles {
    /// One migration file: its number, its name and its SQL text.
    public struct File: Sendable {
        public let version: Int
        public let name: String
        public let sql: String
    }

    /// PostgreSQL migrations, in the order they apply. SwiftPM names each embedded file
    /// after its file name with the leading digit replaced: `001_initial.sql` is `_01_initial_sql`.
    public static let postgres: [File] = [
        File(version: 1, name: "001_initial.sql", sql: text(PackageResources._01_initial_sql)),
        File(version: 2, name: "002_verification.sql", sql: text(PackageResources._02_verification_sql)),
        File(version: 3, name: "003_subscriptions.sql", sql: text(PackageResources._03_subscriptions_sql)),
        File(version: 4, name: "004_replays_audit.sql", sql: text(PackageResources._04_replays_audit_sql)),
        File(version: 5, name: "005_console_sessions.sql", sql: text(PackageResources._05_console_sessions_sql)),
        File(version: 6, name: "006_delivery_heads.sql", sql: text(PackageResources._06_delivery_heads_sql)),
        File(version: 7, name: "007_backlog.sql", sql: text(PackageResources._07_backlog_sql)),
        File(version: 8, name: "008_no_jit.sql", sql: text(PackageResources._08_no_jit_sql)),
        File(version: 9, name: "009_recent_events.sql", sql: text(PackageResources._09_recent_events_sql)),
        File(version: 10, name: "010_security_events.sql", sql: text(PackageResources._10_security_events_sql)),
        File(version: 11, name: "011_event_types.sql", sql: text(PackageResources._11_event_types_sql)),
        File(version: 12, name: "012_subscription_deliveries.sql", sql: text(PackageResources._12_subscription_deliveries_sql)),
        File(version: 13, name: "013_recover.sql", sql: text(PackageResources._13_recover_sql)),
        File(version: 14, name: "014_retention.sql", sql: text(PackageResources._14_retention_sql)),
        File(version: 15, name: "015_no_parent_locks.sql", sql: text(PackageResources._15_no_parent_locks_sql)),
        File(version: 16, name: "016_keys_carry_the_user.sql", sql: text(PackageResources._16_keys_carry_the_user_sql)),
        File(version: 17, name: "017_parked_heads_by_key.sql", sql: text(PackageResources._17_parked_heads_by_key_sql)),
        File(version: 18, name: "018_oauth2.sql", sql: text(PackageResources._18_oauth2_sql)),
        File(version: 19, name: "019_shared_signals.sql", sql: text(PackageResources._19_shared_signals_sql)),
        File(version: 20, name: "020_delivery_by_webhook_id.sql", sql: text(PackageResources._20_delivery_by_webhook_id_sql)),
        File(version: 21, name: "021_delivery_error_kinds.sql", sql: text(PackageResources._21_delivery_error_kinds_sql)),
        File(version: 22, name: "022_console_app_sessions.sql", sql: text(PackageResources._22_console_app_sessions_sql)),
        File(version: 23, name: "023_console_session_credential.sql", sql: text(PackageResources._23_console_session_credential_sql)),
    ]

    /// SQLite migrations for the embedded store, in the order they apply. Their names carry
    /// `sqlite` so the embedded accessors (`_01_sqlite_initial_sql`) differ from PostgreSQL's.
    public static let sqlite: [File] = [
        File(version: 1, name: "001_sqlite_initial.sql", sql: text(PackageResources._01_sqlite_initial_sql)),
        File(version: 2, name: "002_sqlite_console_sessions.sql", sql: text(PackageResources._02_sqlite_console_sessions_sql)),
        File(version: 3, name: "003_sqlite_delivery_heads.sql", sql: text(PackageResources._03_sqlite_delivery_heads_sql)),
        File(version: 4, name: "004_sqlite_backlog.sql", sql: text(PackageResources._04_sqlite_backlog_sql)),
        File(version: 5, name: "005_sqlite_recent_events.sql", sql: text(PackageResources._05_sqlite_recent_events_sql)),
        File(version: 6, name: "006_sqlite_security_events.sql", sql: text(PackageResources._06_sqlite_security_events_sql)),
        File(version: 7, name: "007_sqlite_event_types.sql", sql: text(PackageResources._07_sqlite_event_types_sql)),
        File(version: 8, name: "008_sqlite_subscription_deliveries.sql", sql: text(PackageResources._08_sqlite_subscription_deliveries_sql)),
        File(version: 9, name: "009_sqlite_recover.sql", sql: text(PackageResources._09_sqlite_recover_sql)),
        File(version: 10, name: "010_sqlite_retention.sql", sql: text(PackageResources._10_sqlite_retention_sql)),
        File(version: 11, name: "011_sqlite_oauth2.sql", sql: text(PackageResources._11_sqlite_oauth2_sql)),
        File(version: 12, name: "012_sqlite_shared_signals.sql", sql: text(PackageResources._12_sqlite_shared_signals_sql)),
        File(version: 13, name: "013_sqlite_delivery_by_webhook_id.sql", sql: text(PackageResources._13_sqlite_delivery_by_webhook_id_sql)),
        File(version: 14, name: "014_sqlite_delivery_error_kinds.sql", sql: text(PackageResources._14_sqlite_delivery_error_kinds_sql)),
        File(version: 15, name: "015_sqlite_console_app_sessions.sql", sql: text(PackageResources._15_sqlite_console_app_sessions_sql)),
        File(version: 16, name: "016_sqlite_console_session_credential.sql", sql: text(PackageResources._16_sqlite_console_session_credential_sql)),
    ]

    private static func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}
