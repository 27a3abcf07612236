import EchoRelayCore
import Foundation
import Logging

/// Confirms one event with the OAuth 2 authorization server (the OAuth 2 outcome table of
/// docs/identity-provider.md): introspection first; then UserInfo with the same token for a
/// phone number, or the deactivation rule for an inactive token.
struct OAuth2Verification: Sendable {
    let client: OAuth2Client
    let store: any EventStore

    /// What to do with the event. `answered` gets the statuses the server answered, for the log.
    func decide(_ task: VerificationTask, _ credentials: OAuth2Credentials, answered: inout Logger.Metadata) async throws -> VerificationDecision {
        let introspection = await client.introspect(credentials.accessToken)
        if case .response(let status, _) = introspection { answered["http.status"] = "\(status)" }
        if case .noAnswer(let reason) = introspection { answered["error"] = "\(reason)" }
        switch OAuth2OutcomeRules.introspection(introspection, task: task, policy: client.server.policy) {
        case .decided(let decision):
            return decision
        case .inactive:
            guard task.type.descriptor.evidence == .sessionEnded else { return .final(.rejected(.tokenInactive)) }
            let known = try await store.confirmedToken(userID: task.userID, tokenHash: credentials.tokenHash)
            return .final(OAuth2OutcomeRules.deactivation(task: task, known: known, now: Date()))
        case .confirmed(let expiresAt):
            guard task.type.descriptor.evidence == .sessionAliveShowingPushedPhone else {
                return .final(OAuth2OutcomeRules.confirmed(task: task, tokenHash: credentials.tokenHash, expiresAt: expiresAt))
            }
            guard let userInfo = await client.userInfo(credentials.accessToken) else {
                return .final(.unverifiable(.providerNotConfigured))
            }
            if case .response(let status, _) = userInfo { answered["userinfo.status"] = "\(status)" }
            if case .noAnswer(let reason) = userInfo { answered["error"] = "\(reason)" }
            return OAuth2OutcomeRules.phone(userInfo: userInfo, task: task, tokenHash: credentials.tokenHash, expiresAt: expiresAt)
        }
    }
}
