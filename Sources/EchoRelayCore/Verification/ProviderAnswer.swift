/// What came back from the provider for one request: OAuth Echo, introspection or UserInfo.
public enum ProviderAnswer: Sendable, Equatable {
    case response(status: Int, body: [UInt8])
    /// No answer: timeout, refused connection, TLS failure… (always worth a retry).
    case noAnswer(String)
}

/// What the verify worker does next with an event.
public enum VerificationDecision: Sendable, Equatable {
    case final(VerificationOutcome)
    /// Try again later (5xx, 429, timeout, connection error); after the last try the event is
    /// unverifiable (`provider_unavailable`).
    case retry
    /// Try again later; after the last try the event is unverifiable for this reason.
    case retryOrGiveUp(VerificationReason)
}

/// The outcome table of docs/identity-provider.md, as one pure function.
public enum EchoOutcomeRules {
    public static func decide(
        task: VerificationTask, target: EchoTarget, answer: ProviderAnswer, tokenKnownForUser: Bool
    ) -> VerificationDecision {
        guard case .response(let status, let body) = answer else { return .retry }
        if status >= 500 || status == 429 { return .retry }

        let parsed = try? JSONValue.parse(body)  // once: both readers below look at it
        let errorCodes = Self.errorCodes(in: parsed)
        // 135: the signed timestamp is outside the provider's window; fresh headers are needed.
        if errorCodes.contains(135) { return .final(.unverifiable(.timestampOutOfWindow)) }

        switch status {
        case 200:
            guard let account = Self.account(in: parsed) else { return .final(.rejected(.unreadableResponse)) }
            guard account.id == task.userID else {
                return .final(.init(status: .rejected, reason: .userMismatch, providerUserID: account.id,
                                    providerPhoneNumber: account.phone))
            }
            // The provider confirmed this token belongs to this user.
            func outcome(_ status: EventStatus, _ reason: VerificationReason) -> VerificationDecision {
                .final(.init(status: status, reason: reason, providerUserID: account.id,
                             providerPhoneNumber: account.phone, confirmedTokenHash: target.tokenHash))
            }
            switch task.type.descriptor.evidence {
            case .sessionAlive:
                return outcome(.verified, .providerConfirmed)
            case .sessionAliveShowingPushedPhone:
                return account.phone != nil && account.phone == task.pushedPhoneNumber
                    ? outcome(.verified, .providerConfirmed) : outcome(.rejected, .phoneMismatch)
            case .sessionEnded:
                // The account is alive: a forged deactivation must never log a user out.
                return outcome(.rejected, .accountActive)
            }
        case 401 where errorCodes.contains(89):
            guard task.type.descriptor.evidence == .sessionEnded else { return .final(.rejected(.tokenInvalid)) }
            return tokenKnownForUser
                ? .final(.init(status: .verified, reason: .knownTokenExpired, providerUserID: task.userID))
                : .final(.rejected(.unknownToken))
        case 401:
            return .final(.rejected(errorCodes.contains(32) ? .badSignature : .notAuthenticated))
        case 403:
            return .final(.rejected(.forbidden))
        case 300..<400:
            return .final(.rejected(.redirected))
        default:
            return .final(.rejected(.providerRefused))
        }
    }

    /// `{"errors":[{"code":N,…}]}` → [N].
    static func errorCodes(in body: JSONValue?) -> [Int] {
        guard case .object(let object)? = body, case .array(let errors)? = object["errors"] else { return [] }
        return errors.compactMap { error in
            guard case .object(let fields) = error else { return nil }
            switch fields["code"] {
            case .integer(let code)?: return Int(code)
            case .string(let code)?: return Int(code)
            default: return nil
            }
        }
    }

    /// The account of a Digits `account.json` or Twitter `verify_credentials` answer. An id
    /// or phone number with a NUL character is no account: both are stored with the outcome,
    /// and a value the database refuses would leave the outcome unrecordable, so the event
    /// would be asked about again at every lease, forever.
    static func account(in body: JSONValue?) -> (id: String, phone: String?)? {
        guard case .object(let object)? = body else { return nil }
        let id: String
        switch (object["id_str"], object["id"]) {
        case (.string(let text)?, _) where !text.isEmpty: id = text
        case (_, .integer(let number)?): id = String(number)
        default: return nil
        }
        let phone = object["phone_number"]?.stringValue
        guard !TextRules.containsNUL(id), !(phone.map(TextRules.containsNUL) ?? false) else { return nil }
        return (id, phone)
    }
}
