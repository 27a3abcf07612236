extension API {
    /// An access token as listed: never the token itself (schema `AccessToken`).
    public struct AccessToken: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var role: String
        public var created_at: String
        @Nullable public var revoked_at: String?

        public init(id: String, name: String, role: String, created_at: String, revoked_at: String?) {
            self.id = id
            self.name = name
            self.role = role
            self.created_at = created_at
            self.revoked_at = revoked_at
        }
    }

    /// A token just made, with the token itself, shown this once (schema `AccessTokenWithSecret`).
    public struct CreatedAccessToken: Codable, Sendable, Equatable, CustomReflectable {
        public var id: String
        public var name: String
        public var role: String
        public var created_at: String
        @Nullable public var revoked_at: String?
        public var token: String

        public init(_ record: AccessToken, token: String) {
            id = record.id
            name = record.name
            role = record.role
            created_at = record.created_at
            revoked_at = record.revoked_at
            self.token = token
        }

        /// Printed, the token shows as redacted.
        public var customMirror: Mirror {
            Mirror(self, children: ["id": id, "name": name, "role": role, "token": "<redacted>"], displayStyle: .struct)
        }
    }

    /// `GET /v1/tokens` (schema `AccessTokenList`): every token, oldest first.
    public struct AccessTokenList: Codable, Sendable, Equatable {
        public var tokens: [AccessToken]

        public init(tokens: [AccessToken]) {
            self.tokens = tokens
        }
    }

    /// `POST /v1/tokens` (schema `AccessTokenInput`).
    public struct AccessTokenInput: Codable, Sendable, Equatable {
        public var role: String
        public var name: String
        public var reason: String?

        public init(role: String, name: String, reason: String? = nil) {
            self.role = role
            self.name = name
            self.reason = reason
        }
    }
}
