-- 022: an app team signs in to the console too, to its own subscriptions (its portal).
ALTER TABLE console_sessions DROP CONSTRAINT console_sessions_role_check;
ALTER TABLE console_sessions ADD CONSTRAINT console_sessions_role_check CHECK (role IN ('admin', 'support', 'app'));
