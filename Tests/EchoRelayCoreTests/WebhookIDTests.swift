import EchoRelayCore
import Testing

@Suite struct WebhookIDTests {
    @Test func bytesAreWrittenAsTwoLowercaseHexDigitsEach() {
        #expect([0x00, 0x0f, 0xa0, 0xff, 0x5c].lowercaseHex == "000fa0ff5c")
        #expect([UInt8]().lowercaseHex == "")
    }

    /// The value Python's hashlib gives for md5("evt_1/sub_a"), cut as PostgreSQL's statements cut it.
    @Test func theIDIsMsgAndTheFirst26HexDigitsOfTheMD5OfEventSlashSubscription() {
        #expect(WebhookID.make(eventID: "evt_1", subscriptionID: "sub_a") == "msg_730da6f83a7442e4f0e0d8594e")
    }
}
