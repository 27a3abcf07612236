import EchoRelayCore
import Logging

/// Confirms one event with OAuth Echo (the echo outcome table of docs/identity-provider.md):
/// the echo URL and header checked here first, then the provider's verify-credentials `GET`,
/// and for a deactivation whose token is dead, whether EchoRelay once saw it confirmed.
struct EchoVerification: Sendable {
    let client: EchoClient
    let policy: EchoPolicy
    let store: any EventStore

    /// What to do with the event. `answered` gets what the provider answered, for the log.
    func decide(_ task: VerificationTask, _ echo: EchoCredentials, answered: inout Logger.Metadata) async throws -> VerificationDecision {
        let target: EchoTarget
        switch policy.target(for: echo) {
        case .failure(let reason):
            return .final(.rejected(reason))
        case .success(let checked):
            target = checked
        }
        let answer = await client.send(target)
        if case .response(let status, _) = answer { answered["http.status"] = "\(status)" }
        if case .noAnswer(let reason) = answer { answered["error"] = "\(reason)" }
        var tokenKnown = false
        if task.type.descriptor.evidence == .sessionEnded, case .response(401, _) = answer, let hash = target.tokenHash {
            tokenKnown = try await store.isTokenConfirmed(userID: task.userID, tokenHash: hash)
        }
        return EchoOutcomeRules.decide(task: task, target: target, answer: answer, tokenKnownForUser: tokenKnown)
    }
}
