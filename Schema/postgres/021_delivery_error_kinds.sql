-- 021: distinct kinds of delivery failure (connection_refused, connect_timeout, reset) beside
-- the old ones, which stay. NOT VALID: the rows already there hold old kinds, all still
-- allowed, so no scan under the table's lock is needed.
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_error_kind_check;
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_error_kind_check CHECK (error_kind IN (
    'connection_refused', 'connect_timeout', 'timeout', 'reset', 'connect', 'dns', 'tls', 'status', 'refused_address', 'other'
)) NOT VALID;
ALTER TABLE test_deliveries DROP CONSTRAINT test_deliveries_error_kind_check;
ALTER TABLE test_deliveries ADD CONSTRAINT test_deliveries_error_kind_check CHECK (error_kind IN (
    'connection_refused', 'connect_timeout', 'timeout', 'reset', 'connect', 'dns', 'tls', 'status', 'refused_address', 'other'
)) NOT VALID;
