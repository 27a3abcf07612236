/// The three kinds of session update a provider can push (docs/identity-provider.md).
public enum EventType: String, Sendable, CaseIterable, Codable {
    case tokenRotated = "token.rotated"
    case phoneChanged = "phone.changed"
    case accountDeactivated = "account.deactivated"
}
