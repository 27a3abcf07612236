/// The delivery queue's settings (the delivery worker's configuration gives them).
public struct DeliveryQueueConfiguration: WorkLoopSettings {
    /// How long a claimed or handed-off delivery stays with this process.
    public var lease: Duration = .seconds(60)
    /// A webhook's time limit: what a delivery sent from memory must finish within its lease.
    public var timeout: Duration = .seconds(15)
    public var pollInterval: Duration = .seconds(1)
    /// At a graceful stop, how long in-flight webhooks may take before they are cancelled and
    /// handed back for another process.
    public var shutdownGrace: Duration = .seconds(10)
    /// Webhooks in flight at once per process.
    public var concurrency = 64
    /// Webhooks in flight at once per subscription.
    public var perSubscriptionConcurrency = 16
    /// A failure this long after a subscription's last success disables it.
    public var disableAfter: Duration = .seconds(5 * 86_400)
    /// How long a finished delivery's attempt waits for its event's other deliveries that went
    /// out with it, to be written in the same commit (`SiblingAttempts`).
    public var siblingLinger: Duration = .milliseconds(20)

    public init() {}
}
