import EchoRelayCore
import EchoRelaySharedSignals
import Foundation
import Testing

/// What each SET means to EchoRelay, from the published examples of RFC 8417 and the CAEP,
/// RISC and SSF specifications (their claims as printed there; the issuer made ours where a
/// subject must belong to the configured transmitter).
@Suite struct SecurityEventMeaningTests {
    static let issuer = "https://idp.example.com/3456789/"

    static func meaning(_ claims: String) throws -> SecurityEventMeaning {
        let root = try #require(try JSONValue.parse(Array(claims.utf8)).objectValue)
        let events = try #require(root["events"]?.objectValue)
        let (type, event) = try #require(events.first)
        let set = VerifiedSecurityEvent(jti: root["jti"]?.stringValue ?? "", issuer: root["iss"]?.stringValue ?? "",
                                        issuedAt: Date(), eventType: type, event: event, subject: root["sub_id"])
        return SecurityEventMeaning(set, issuer: issuer)
    }

    /// CAEP 1.0, credential change (its example).
    @Test func aCAEPCredentialChangeIsATokenRotationOfItsSubject() throws {
        let meaning = try Self.meaning("""
            {"iss": "https://idp.example.com/3456789/", "jti": "07efd930f0977e4fcc1149a733ce7f78", "iat": 1615305159,
             "aud": "https://sp.example2.net/caep", "txn": 8675309,
             "sub_id": {"format": "iss_sub", "iss": "https://idp.example.com/3456789/", "sub": "jane.smith@example.com"},
             "events": {"https://schemas.openid.net/secevent/caep/event-type/credential-change": {
                "credential_type": "fido2-roaming", "change_type": "create", "fido2_aaguid": "accced6a-63f5-490a-9eea-e59bc1896cfc",
                "friendly_name": "Jane's USB authenticator", "initiating_entity": "user",
                "reason_admin": {"en": "User self-enrollment"}, "event_timestamp": 1615304991643}}}
            """)
        #expect(meaning == .update(.tokenRotated, subject: .user("jane.smith@example.com"), phoneNumber: nil))
    }

    /// RISC 1.0, account disabled: the subject inside the event, as older transmitters send it.
    @Test func aRISCAccountDisabledIsADeactivationAndItsEventSubjectCounts() throws {
        let meaning = try Self.meaning("""
            {"iss": "https://idp.example.com/3456789/", "jti": "756E69717565206964656E746966696572", "iat": 1508184845,
             "aud": "636C69656E745F6964",
             "events": {"https://schemas.openid.net/secevent/risc/event-type/account-disabled": {
                "subject": {"format": "iss_sub", "iss": "https://idp.example.com/3456789/", "sub": "7375626A656374"},
                "reason": "hijacking"}}}
            """)
        #expect(meaning == .update(.accountDeactivated, subject: .user("7375626A656374"), phoneNumber: nil))
        let purged = try Self.meaning("""
            {"events": {"https://schemas.openid.net/secevent/risc/event-type/account-purged": {
                "subject": {"format": "opaque", "id": "f67e39a0a4d34d56b3aa1bc4cff0069f"}}}}
            """)
        #expect(purged == .update(.accountDeactivated, subject: .user("f67e39a0a4d34d56b3aa1bc4cff0069f"), phoneNumber: nil))
    }

    /// RISC identifier changed: a phone change is relayed with its new number; the
    /// specification's own example, an email change, is not.
    @Test func anIdentifierChangeIsAPhoneChangeOnlyForAPhoneNumber() throws {
        let phone = try Self.meaning("""
            {"sub_id": {"format": "complex", "user": {"format": "iss_sub", "iss": "https://idp.example.com/3456789/", "sub": "4815162342"}},
             "events": {"https://schemas.openid.net/secevent/risc/event-type/identifier-changed": {
                "subject": {"format": "phone_number", "phone_number": "+12065550100"}, "new-value": "+12065550101"}}}
            """)
        #expect(phone == .update(.phoneChanged, subject: .user("4815162342"), phoneNumber: "+12065550101"))
        let byNumber = try Self.meaning("""
            {"events": {"https://schemas.openid.net/secevent/risc/event-type/identifier-changed": {
                "subject": {"format": "phone_number", "phone_number": "+12065550100"}, "new-value": "+12065550101"}}}
            """)
        #expect(byNumber == .update(.phoneChanged, subject: .phoneNumber("+12065550100"), phoneNumber: "+12065550101"))
        let email = try Self.meaning("""
            {"events": {"https://schemas.openid.net/secevent/risc/event-type/identifier-changed": {
                "subject": {"format": "email", "email": "john.doe@example.com"}, "new-value": "john.roe@example.com"}}}
            """)
        #expect(email == .ignored("an identifier change that is not a phone number's"))
    }

    /// SSF verification (its example) is recorded with its state; CAEP session revoked ends the
    /// session (a deactivation with its reason); RFC 8417's SCIM example is accepted and not relayed.
    @Test func theVerificationEventAndOtherTypesAreNotRelayed() throws {
        let verification = try Self.meaning("""
            {"jti": "123456", "iss": "https://transmitter.example.com", "aud": "receiver.example.com", "iat": 1493856000,
             "sub_id": {"format": "opaque", "id": "f67e39a0a4d34d56b3aa1bc4cff0069f"},
             "events": {"https://schemas.openid.net/secevent/ssf/event-type/verification": {
                "state": "VGhpcyBpcyBhbiBleGFtcGxlIHN0YXRlIHZhbHVlLgo="}}}
            """)
        #expect(verification == .verification(state: "VGhpcyBpcyBhbiBleGFtcGxlIHN0YXRlIHZhbHVlLgo="))
        let revoked = try Self.meaning("""
            {"sub_id": {"format": "opaque", "id": "dMTlD|1600802906337.16|16008.16"},
             "events": {"https://schemas.openid.net/secevent/caep/event-type/session-revoked": {"event_timestamp": 1615304991643}}}
            """)
        #expect(revoked == .update(.accountDeactivated, subject: .user("dMTlD|1600802906337.16|16008.16"), phoneNumber: nil,
                                   reason: "session_revoked"))
        let scim = try Self.meaning("""
            {"jti": "4d3559ec67504aaba65d40b0363faad8", "iat": 1458496404, "iss": "https://scim.example.com",
             "aud": ["https://scim.example.com/Feeds/98d52461fa5bbc879593b7754", "https://scim.example.com/Feeds/5d7604516b1d08641d7676ee7"],
             "events": {"urn:ietf:params:scim:event:create": {
                "ref": "https://scim.example.com/Users/44f6142df96bd6ab61e7521d9", "attributes": ["id", "name", "userName", "password", "emails"]}}}
            """)
        #expect(scim == .ignored("an event type EchoRelay does not relay"))
    }

    @Test func aSubjectOfAnotherIssuerOrWithoutAUserIsUnmatched() {
        #expect(SecurityEventSubject(.object(["format": .string("iss_sub"), "iss": .string("https://other.example/"), "sub": .string("1")]), issuer: Self.issuer)
                == .unmatched("an iss_sub subject of another issuer"))
        #expect(SecurityEventSubject(.object(["format": .string("email"), "email": .string("A@Example.com")]), issuer: Self.issuer)
                == .email("a@example.com"), "an email names the user whose verified email it is")
        #expect(SecurityEventSubject(.object(["format": .string("account"), "uri": .string("acct:a@example.com")]), issuer: Self.issuer)
                == .unmatched("a subject of format account"))
        #expect(SecurityEventSubject(nil, issuer: Self.issuer) == .unmatched("no subject"))
    }
}
