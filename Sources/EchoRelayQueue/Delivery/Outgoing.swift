import EchoRelayCore

/// A delivery to send, with its body and the group of its event's deliveries that went out with it.
public struct Outgoing: Sendable {
    public let task: DeliveryTask
    /// Written once for the deliveries of an event that go out together: every subscription
    /// gets the same body. (A cache of bodies shared by all deliveries cost more, hashing and
    /// comparing their fields, than writing them: 2–4% of serve's CPU in perf.)
    public let body: [UInt8]
    /// Nil when it went out alone.
    public let siblings: SiblingAttempts?

    /// The tasks as they go out: deliveries of one event (each to another subscription) form
    /// a group whose attempts are written together.
    public static func grouped(_ tasks: [DeliveryTask], linger: Duration, write: @escaping SiblingAttempts.Write) -> [Outgoing] {
        let counts = Dictionary(tasks.map { ($0.eventID, 1) }, uniquingKeysWith: +)
        var groups: [String: SiblingAttempts] = [:]
        var bodies: [DeliveryBody: [UInt8]] = [:]
        return tasks.map { task in
            let content = DeliveryBody(task)
            let body = bodies[content] ?? content.bytes()
            bodies[content] = body
            let count = counts[task.eventID, default: 1]
            guard count > 1 else { return Outgoing(task: task, body: body, siblings: nil) }
            let group = groups[task.eventID] ?? SiblingAttempts(count: count, linger: linger, write: write)
            groups[task.eventID] = group
            return Outgoing(task: task, body: body, siblings: group)
        }
    }
}
