/// Facts about this build.
public enum EchoRelayInfo {
    public static let version = "0.1.0"
}
