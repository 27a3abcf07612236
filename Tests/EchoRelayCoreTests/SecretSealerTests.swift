import Crypto
@testable import EchoRelayCore
import Foundation
import Testing

@Suite struct SecretSealerTests {
    let secret = "whsec_" + Data(repeating: 7, count: 24).base64EncodedString()

    @Test func aSealedSecretOpensOnItsOwnRowOnly() throws {
        let key = SecretSealer.generateKey()
        let sealer = try SecretSealer(keys: key)
        let sealed = try sealer.seal(secret, subscriptionID: "sub_a")
        #expect(sealed.hasPrefix("v1:\(sealer.sealingKeyID):"))
        #expect(!sealed.contains(secret) && !sealed.contains(key))
        #expect(SecretSealer.isSealed(sealed))
        #expect(try sealer.open(sealed, subscriptionID: "sub_a") == secret)
        #expect(try sealer.seal(secret, subscriptionID: "sub_a") != sealed, "a fresh nonce every time")

        // The subscription id is authenticated: moved to another row, it does not open.
        #expect(throws: SecretSealerError.cannotOpen(id: sealer.sealingKeyID, subscriptionID: "sub_b")) {
            try sealer.open(sealed, subscriptionID: "sub_b")
        }
        // Nor when altered.
        var bytes = Array(sealed)
        bytes[bytes.count - 3] = bytes[bytes.count - 3] == "A" ? "B" : "A"
        #expect(throws: SecretSealerError.self) { try sealer.open(String(bytes), subscriptionID: "sub_a") }
    }

    @Test func theKeyIDIsAShortFingerprintOfTheKey() throws {
        let key = Data((0..<32).map { UInt8($0) })
        let sealer = try SecretSealer(keys: key.base64EncodedString())
        let expected = SHA256.hash(data: key).prefix(4).map { String(format: "%02x", $0) }.joined()
        #expect(sealer.sealingKeyID == expected && expected.count == 8)
        #expect(Data(base64Encoded: SecretSealer.generateKey())?.count == 32)
        #expect(SecretSealer.generateKey() != SecretSealer.generateKey())
    }

    @Test func aValueSealedWithAnotherKeyNamesThatKeyOnly() throws {
        let oldKey = SecretSealer.generateKey(), newKey = SecretSealer.generateKey()
        let old = try SecretSealer(keys: oldKey)
        let new = try SecretSealer(keys: newKey)
        let sealed = try old.seal(secret, subscriptionID: "sub_a")
        let error = #expect(throws: SecretSealerError.unknownKey(id: old.sealingKeyID, subscriptionID: "sub_a")) {
            try new.open(sealed, subscriptionID: "sub_a")
        }
        let text = try #require(error).description
        #expect(text.contains("sealed with key \(old.sealingKeyID), which ECHORELAY_SECRET_KEY does not hold"))
        #expect(!text.contains(oldKey) && !text.contains(newKey) && !text.contains(secret))

        let none = #expect(throws: SecretSealerError.noKey(id: old.sealingKeyID, subscriptionID: "sub_a")) {
            try SecretSealer.open(sealed, subscriptionID: "sub_a", with: nil)
        }
        #expect(try #require(none).description.contains("ECHORELAY_SECRET_KEY is not set"))
    }

    @Test func duringRotationTheFirstKeySealsAndEveryKeyOpens() throws {
        let oldKey = SecretSealer.generateKey(), newKey = SecretSealer.generateKey()
        let old = try SecretSealer(keys: oldKey)
        let both = try SecretSealer(keys: "\(newKey), \(oldKey)")
        #expect(both.keyIDs == [try SecretSealer(keys: newKey).sealingKeyID, old.sealingKeyID])

        let sealedOld = try old.seal(secret, subscriptionID: "sub_a")
        #expect(try both.open(sealedOld, subscriptionID: "sub_a") == secret)
        #expect(try both.seal(secret, subscriptionID: "sub_a").hasPrefix("v1:\(both.sealingKeyID):"))

        // Reseal: the old value moves to the new key; a value under the new key stays.
        let resealed = try #require(try both.reseal(sealedOld, subscriptionID: "sub_a"))
        #expect(SecretSealer.keyID(ofSealed: resealed) == both.sealingKeyID)
        #expect(try SecretSealer(keys: newKey).open(resealed, subscriptionID: "sub_a") == secret)
        #expect(try both.reseal(resealed, subscriptionID: "sub_a") == nil)
        // Plain text is sealed.
        let sealedPlain = try #require(try both.reseal(secret, subscriptionID: "sub_a"))
        #expect(try both.open(sealedPlain, subscriptionID: "sub_a") == secret)
    }

    @Test func plainTextIsReadAsIs() throws {
        let sealer = try SecretSealer(keys: SecretSealer.generateKey())
        #expect(try sealer.open(secret, subscriptionID: "sub_a") == secret)
        #expect(try SecretSealer.open(secret, subscriptionID: "sub_a", with: nil) == secret)
        #expect(!SecretSealer.isSealed(secret) && SecretSealer.keyID(ofSealed: secret) == nil)
    }

    @Test func malformedKeysAndValuesAreRefusedWithoutShowingThem() throws {
        let good = SecretSealer.generateKey()
        let short = Data(repeating: 1, count: 16).base64EncodedString()
        for (text, position, count) in [("", 1, 1), ("not base64!", 1, 1), (short, 1, 1), ("\(good),\(short)", 2, 2), ("\(good),", 2, 2)] {
            let error = #expect(throws: SecretSealerError.malformedKey(position: position, count: count)) {
                try SecretSealer(keys: text)
            }
            let description = try #require(error).description
            #expect(description.hasPrefix("ECHORELAY_SECRET_KEY: "))
            #expect(!description.contains(good) && !description.contains(short))
        }
        #expect(throws: SecretSealerError.self) { try SecretSealer(keys: "\(good),\(good)") }

        let sealer = try SecretSealer(keys: good)
        #expect(throws: SecretSealerError.malformedSealedValue(subscriptionID: "sub_a")) {
            try sealer.open("v1:abcd", subscriptionID: "sub_a")
        }
        #expect(throws: SecretSealerError.malformedSealedValue(subscriptionID: "sub_a")) {
            try sealer.open("v1:\(sealer.sealingKeyID):***", subscriptionID: "sub_a")
        }
        #expect(throws: SecretSealerError.cannotOpen(id: sealer.sealingKeyID, subscriptionID: "sub_a")) {
            try sealer.open("v1:\(sealer.sealingKeyID):AAAA", subscriptionID: "sub_a")
        }
    }

    @Test func signingSecretsOpenEachSealedValueOnceAndOnlyOnItsOwnRow() throws {
        let sealer = try SecretSealer(keys: SecretSealer.generateKey())
        let sealed = try sealer.seal(secret, subscriptionID: "sub_a")
        for _ in 0..<3 {
            let opened = try SecretSealer.signingSecrets(sealed, nil, subscriptionID: "sub_a", with: sealer)
            #expect(opened.map(\.revealed) == [secret])
        }
        #expect(sealer.opened.count == 1, "opened once, then remembered")

        // Remembered for its row only: the same sealed text on another row still fails.
        #expect(throws: SecretSealerError.cannotOpen(id: sealer.sealingKeyID, subscriptionID: "sub_b")) {
            try SecretSealer.signingSecrets(sealed, nil, subscriptionID: "sub_b", with: sealer)
        }

        // A rotation stores a new sealed value, which is opened afresh beside the previous one.
        let rotated = "whsec_" + Data(repeating: 9, count: 24).base64EncodedString()
        let resealed = try sealer.seal(rotated, subscriptionID: "sub_a")
        let both = try SecretSealer.signingSecrets(resealed, sealed, subscriptionID: "sub_a", with: sealer)
        #expect(both.map(\.revealed) == [rotated, secret])
        #expect(sealer.opened.count == 2)
        #expect(!"\(both)".contains("whsec_"), "opened secrets print redacted")
    }
}
