// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "echorelay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "echorelay", targets: ["echorelay"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),  // the webhooks' TLS settings
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),  // Security Event Tokens (JWS, JWKS)
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),  // the support console's pages
    ],
    targets: [
        // Domain types, validation and signatures: no server or database dependency.
        .target(
            name: "EchoRelayCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),  // the metrics API only; the backend is chosen by serve
            ],
            swiftSettings: swiftSettings
        ),
        // The queue: claim, hand-off and completion for every kind of work (verification,
        // delivery, replay), the wake-ups, and the time limits around them. The stores give it
        // each kind's statements; the workers only do the work.
        .target(
            name: "EchoRelayQueue",
            dependencies: [
                "EchoRelayCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),  // the event loops the completers and lingers run on
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The select lists the two stores share, beside the domain's row readers: Core holds no SQL.
        .target(
            name: "EchoRelaySQL",
            dependencies: ["EchoRelayCore"],
            swiftSettings: swiftSettings
        ),
        // The wire contract: the JSON bodies of the HTTP API, encoded by the handlers and
        // decoded by the CLI; openapi.yaml is held to them by OpenAPITests.
        .target(
            name: "EchoRelayAPI",
            swiftSettings: swiftSettings
        ),
        // Stand-ins on loopback for the demo and the tests: an identity provider that answers
        // OAuth Echo and a subscriber that checks deliveries, each with its own signature code.
        .target(
            name: "EchoRelayStandIns",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",  // WakeSignal, to hold and release a request
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),  // a graceful stop
            ],
            swiftSettings: swiftSettings
        ),
        // The numbered SQL migrations, embedded in the binary so a deployment is one file.
        .target(
            name: "EchoRelaySchema",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Schema",
            exclude: ["README.md"],
            resources: [.embedInCode("postgres"), .embedInCode("sqlite")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "EchoRelayPostgres",
            dependencies: [
                "EchoRelayCore",
                "EchoRelaySQL",
                "EchoRelayQueue",  // time limits: a statement never answered, a host that does not answer
                "EchoRelaySchema",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),      // the pool's errors, by value
                .product(name: "NIOCore", package: "swift-nio"),                         // the committers' event loop
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),  // DatabaseClient is a service
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The embedded store: one SQLite file, one process, no database server.
        .target(
            name: "EchoRelaySQLite",
            dependencies: [
                "EchoRelayCore",
                "EchoRelaySQL",
                "EchoRelaySchema",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOCore", package: "swift-nio"),        // ByteBuffer, for BLOB binds
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The verify workers and their outbound HTTP.
        .target(
            name: "EchoRelayWorkers",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // OpenID Shared Signals: verifying the Security Event Tokens a transmitter pushes.
        .target(
            name: "EchoRelaySharedSignals",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",  // withTimeout, around a JWKS answer's body
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),  // fetching the transmitter's keys
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "EchoRelayHTTP",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",  // an ingest's commit that timed out is a 503
                "EchoRelayAPI",
                "EchoRelaySharedSignals",  // POST /v1/sets
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),  // GET /metrics
                .product(name: "Mustache", package: "swift-mustache"),      // /console pages
                .product(name: "Crypto", package: "swift-crypto"),          // console session keys
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The OpenAPI description (GET /openapi.yaml) and the console's templates and style
            // sheet, embedded in the binary itself.
            resources: [.embedInCode("OpenAPI"), .embedInCode("Console/Templates")],
            swiftSettings: swiftSettings
        ),
        // Configuration → stores, services and the HTTP application, as one ServiceGroup.
        .target(
            name: "EchoRelayServer",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",
                "EchoRelaySharedSignals",
                "EchoRelayPostgres",
                "EchoRelaySQLite",
                "EchoRelaySchema",  // MigrationError, for the commands that open a store
                "EchoRelayHTTP",
                "EchoRelayWorkers",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),  // the listen address's check
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "echorelay",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayAPI",  // the bodies the support verbs decode
                "EchoRelayStandIns",  // `echorelay demo`'s provider and subscriber
                "EchoRelayServer",
                "EchoRelaySharedSignals",  // serve's ECHORELAY_SET_* settings
                "EchoRelaySchema",  // MigrationError, from `tokens`
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                // The support verbs (events, replay, replays, dead-letters) are clients of the HTTP API.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),  // serve's event loops as the tasks' executor
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // `echorelay demo` runs a stand-in identity provider and subscriber.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        // The end-to-end benchmark's HTTP floor (scripts/bench-e2e.bash): an event's HTTP
        // exchanges on serve's HTTP libraries, and nothing else.
        .executableTarget(
            name: "echorelay-http-floor",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/http-floor",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",
                "EchoRelayStandIns",
                "EchoRelayPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EchoRelayCoreTests",
            // TestSupport for Spawned: every child process of the test bundle starts through it,
            // not Foundation's Process (see Spawned).
            dependencies: ["EchoRelayCore", "EchoRelayQueue", "TestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EchoRelayIntegrationTests",
            dependencies: [
                "EchoRelayCore",
                "EchoRelayQueue",
                "EchoRelayAPI",
                "EchoRelayStandIns",
                "EchoRelayWorkers",
                "EchoRelayPostgres",
                "EchoRelaySQLite",
                "EchoRelayHTTP",
                "EchoRelayServer",
                "EchoRelaySharedSignals",
                "EchoRelaySchema",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),  // the pool's errors, to describe
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),      // raw TCP clients that misbehave on purpose
                .product(name: "NIOSSL", package: "swift-nio-ssl"),    // a test CA for the webhooks' TLS
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            // promtool reads the alert rules' tests from the source tree.
            exclude: ["Alerts/alerts-test.yml"],
            swiftSettings: swiftSettings
        ),
    ]
)
