/// Where an event stands in verification. `pending` until the verify workers decide.
public enum EventStatus: String, Sendable, Codable, CaseIterable {
    case pending
    case verified
    case rejected
    case unverifiable
}
