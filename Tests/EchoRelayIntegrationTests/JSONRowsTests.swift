import EchoRelayCore
@testable import EchoRelayPostgres
import Foundation
import PostgresNIO
import TestSupport
import Testing

/// The batch statements' rows, written field by field (`JSONRowsWriter`), say what
/// `JSONEncoder` said of the same rows, and PostgreSQL reads every text back as it was.
@Suite struct JSONRowsTests {
    /// Texts that need escaping, or are easy to get wrong in UTF-8.
    static let awkward = [
        "plain", "", "quote \" and backslash \\ and slash /", "line\nbreak\rreturn\ttab", "bell \u{07} escape \u{1B} unit \u{1F}",
        "délivré ✓ 🚀 日本", "{\"not\": \"json\"}", "trailing backslash \\",
    ]

    static func attempt(_ index: Int, text: String?) -> RecordedAttempt {
        let task = DeliveryTask(
            deliveryID: Int64(index) * 1_000_000_007, eventID: "e\(index)", subscriptionID: "sub_\(index)", webhookID: "msg_\(index)",
            url: "https://hooks.example.com", secrets: [], attempts: index, type: .tokenRotated, userID: text ?? "u",
            sequence: Int64(index), occurredAt: Date(timeIntervalSince1970: 1_800_000_000.123456), verifiedAt: Date(),
            phoneNumber: nil, previousPhoneNumber: nil)
        let attempt = DeliveryAttempt(startedAt: Date(timeIntervalSince1970: 1_800_000_000 + Double(index) / 7),
                                      duration: .milliseconds(index * 13), statusCode: index % 2 == 0 ? 200 : nil,
                                      errorKind: index % 2 == 0 ? nil : .timeout, error: text, responseHead: text)
        let next: DeliveryNext = switch index % 3 {
        case 0: .delivered
        case 1: .retry(after: .milliseconds(1500))
        default: .dead(disableSubscription: text)
        }
        return RecordedAttempt(task: task, owner: "host:1:abc", attempt: attempt, next: next, disableAfter: .seconds(432_000),
                               handOff: index % 2 == 0 ? HandOff(owner: "host:1:abc", lease: .seconds(60)) : nil, cap: index % 2 == 0 ? 8 : .max)
    }

    static func finish(_ index: Int, text: String?) -> VerificationFinish {
        let task = VerificationTask(workItemID: Int64(index), eventID: "e\(index)", type: index % 2 == 0 ? .phoneChanged : .accountDeactivated,
                                    userID: "u\(index)", sequence: Int64(index), occurredAt: Date(timeIntervalSince1970: 1_799_999_999.5),
                                    pushedPhoneNumber: text, echo: nil, attempts: 1)
        let outcome = VerificationOutcome(status: index % 2 == 0 ? .verified : .rejected, reason: .providerConfirmed,
                                          providerUserID: text, providerPhoneNumber: text,
                                          confirmedTokenHash: index % 2 == 0 ? Array(repeating: UInt8(index), count: 32) : nil)
        return VerificationFinish(task: task, owner: "host:1:abc", outcome: outcome,
                                  handOff: index % 2 == 0 ? HandOff(owner: "host:1:abc", lease: .seconds(60)) : nil)
    }

    /// Both texts parsed, numbers compared as numbers (the encoder writes 1800000000.0 as
    /// 1800000000; the writer keeps the fraction's zero).
    static func meaning(_ text: String) throws -> JSONValue {
        func numbersAsDoubles(_ value: JSONValue) -> JSONValue {
            switch value {
            case .integer(let number): .number(Double(number))
            case .array(let items): .array(items.map(numbersAsDoubles))
            case .object(let fields): .object(fields.mapValues(numbersAsDoubles))
            default: value
            }
        }
        return numbersAsDoubles(try JSONValue.parse(Array(text.utf8)))
    }

    @Test func theWrittenRowsMeanWhatTheEncodersDid() throws {
        let texts: [String?] = Self.awkward + [nil]
        let attempts = texts.enumerated().map { RecordedAttempt.Row($0, Self.attempt($0, text: $1)) }
        let finishes = texts.enumerated().map { VerificationFinish.Row($0, Self.finish($0, text: $1)) }
        let encoder = JSONEncoder()
        #expect(try Self.meaning(JSONRowsWriter.text(attempts))
                == Self.meaning(String(decoding: try encoder.encode(attempts), as: UTF8.self)))
        #expect(try Self.meaning(JSONRowsWriter.text(finishes))
                == Self.meaning(String(decoding: try encoder.encode(finishes), as: UTF8.self)))
        #expect(JSONRowsWriter.text([RecordedAttempt.Row]()) == "[]")
    }

    @Test func postgreSQLReadsEveryTextAndNumberBack() async throws {
        try await TestDatabase.withFresh { database in
            try await database.withClient { client in
                let texts: [String?] = Self.awkward + [nil]
                let rows = texts.enumerated().map { RecordedAttempt.Row($0, Self.attempt($0, text: $1)) }
                let read = try await client.query("""
                    SELECT position, error, delivery_id, started_at FROM jsonb_to_recordset(\(JSONRowsWriter.text(rows))::jsonb)
                        AS x(position int, error text, delivery_id bigint, started_at float8)
                    ORDER BY position
                    """).collect()
                #expect(read.count == texts.count)
                for (row, expected) in zip(read, rows) {
                    let (position, error, deliveryID, startedAt) = try row.decode((Int, String?, Int64, Double).self)
                    #expect(position == expected.position)
                    #expect(error == expected.error)
                    #expect(deliveryID == expected.delivery_id)
                    #expect(startedAt == expected.started_at, "a float8 round-trips exactly")
                }
            }
        }
    }
}
