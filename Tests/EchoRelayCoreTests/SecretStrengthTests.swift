import Crypto
import EchoRelayCore
import Foundation
import Testing

@Suite struct SecretStrengthTests {
    @Test func randomSecretsOf128BitsOrMorePass() {
        for _ in 0..<200 {
            let bytes = SymmetricKey(size: .init(bitCount: 192)).withUnsafeBytes { Data($0) }
            #expect(SecretStrength.isStrong(bytes.base64EncodedString()))
            #expect(SecretStrength.isStrong(bytes.map { String(format: "%02x", $0) }.joined()))
        }
    }

    @Test(arguments: ["", "password", "correcthorsebattery", String(repeating: "a", count: 200), String(repeating: "ab", count: 20),
                      "2026-12-04T10:00:00", "0123456789012345"])
    func wordsDatesRepeatsAndShortStringsFail(_ text: String) {
        #expect(!SecretStrength.isStrong(text), "\(SecretStrength.estimatedBits(text)) bits")
    }

    @Test func aKeyNeedsSixteenBytes() {
        #expect(!SecretStrength.isStrong(keyBytes: 15))
        #expect(SecretStrength.isStrong(keyBytes: 16))
    }
}
