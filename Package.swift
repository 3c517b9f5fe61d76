// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "siwa-jobs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "siwa-jobs", targets: ["siwa-jobs"]),
    ],
    targets: [
        // C libraries from Debian packages.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),

        // The one source of time (now and sleep), injected everywhere that reads the clock or waits.
        .target(name: "Clocks", swiftSettings: strict),
        // A small declarative command layer: commands, options, arguments, help and usage errors.
        .target(name: "Commands", dependencies: ["SIWACore"], swiftSettings: strict),
        // The shared error vocabulary (ConfigurationError), below every library.
        .target(name: "SIWACore", swiftSettings: strict),
        // Service lifecycle: the Service protocol, a ServiceGroup and the one signal source.
        .target(name: "Lifecycle", dependencies: ["Clocks"], swiftSettings: strict),
        // libpq wrapper: connections, bind-parameter SQL, rows, transactions, LISTEN/NOTIFY, COPY.
        .target(name: "Postgres", dependencies: ["SIWACore", "CLibPQ"], swiftSettings: strict),
        // OpenSSL wrappers: ES256, RS256, AES-256-GCM, SHA-256, base64url, PEM loading.
        .target(name: "SIWACrypto", dependencies: ["COpenSSL"], swiftSettings: strict),
        // Everything Apple: client secret, HTTP transport (libcurl), REST client, error classes.
        .target(name: "AppleID", dependencies: ["SIWACore", "Clocks", "SIWACrypto", "CCurl"], swiftSettings: strict),
        // Prometheus text exposition, lock-free counters and histograms, the atomic textfile write.
        .target(name: "Metrics", swiftSettings: strict),
        // The files of sql/, compiled in at build time by the EmbedSQL plugin (no copy checked in).
        .target(name: "EmbeddedSQL", swiftSettings: strict, plugins: ["EmbedSQL"]),
        // Generic durable queue on PostgreSQL and the worker supervisor, with its own migration
        // group. Knows nothing about Apple.
        .target(name: "Queue", dependencies: ["SIWACore", "Clocks", "Lifecycle", "Postgres", "EmbeddedSQL"], swiftSettings: strict),
        // The job kinds, their migration group, seeding and reports.
        .target(name: "SIWAJobs", dependencies: ["SIWACore", "Clocks", "Lifecycle", "Queue", "AppleID", "Postgres", "SIWACrypto", "MicroHTTP", "EmbeddedSQL", "Metrics"], swiftSettings: strict),
        // The one HTTP server (libmicrohttpd): the notification receiver and the sandbox serve on it.
        .target(name: "MicroHTTP", dependencies: ["Clocks", "Lifecycle", "CMicroHTTPD"], swiftSettings: strict),
        // A faithful local stand-in for appleid.apple.com, served by MicroHTTP.
        .target(name: "Sandbox", dependencies: ["SIWACore", "Clocks", "Lifecycle", "MicroHTTP", "SIWACrypto"], swiftSettings: strict),
        // The CLI.
        .executableTarget(
            name: "siwa-jobs",
            dependencies: ["Commands", "SIWACore", "Clocks", "Lifecycle", "SIWAJobs", "Queue", "AppleID", "Postgres", "SIWACrypto", "Sandbox", "MicroHTTP", "Metrics"],
            swiftSettings: strict,
            // gperftools' tcmalloc (Debian's libgoogle-perftools-dev) takes malloc and free for the
            // whole process, Swift's runtime, libcurl, OpenSSL and libpq included: a sixth of the
            // worker's CPU was glibc's malloc (README "Cost per item").
            linkerSettings: [.linkedLibrary("tcmalloc_minimal")]
        ),

        // Build-time embedding of sql/: a local build-tool plugin and the tool it runs.
        .plugin(name: "EmbedSQL", capability: .buildTool(), dependencies: ["EmbedSQLTool"]),
        .executableTarget(name: "EmbedSQLTool", path: "Plugins/EmbedSQLTool", swiftSettings: strict),

        // Test doubles (manual clock, scripted transport, in-memory job store, log sink): linked by
        // test targets only, never by the executable.
        .target(name: "TestSupport", dependencies: ["Clocks", "AppleID", "Queue"], swiftSettings: strict),

        .testTarget(name: "CommandsTests", dependencies: ["Commands"], swiftSettings: strict),
        .testTarget(name: "CLITests", dependencies: ["siwa-jobs", "Commands", "Clocks", "SIWAJobs", "Queue", "AppleID", "Sandbox", "SIWACore", "SIWACrypto", "Postgres", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "PostgresTests", dependencies: ["TestSupport", "Postgres"], swiftSettings: strict),
        .testTarget(name: "QueueTests", dependencies: ["TestSupport", "Queue", "Postgres", "Clocks", "Lifecycle"], swiftSettings: strict),
        .testTarget(name: "SIWACryptoTests", dependencies: ["TestSupport", "SIWACrypto"], swiftSettings: strict),
        .testTarget(name: "AppleIDTests", dependencies: ["TestSupport", "AppleID", "SIWACrypto"], swiftSettings: strict),
        .testTarget(name: "LifecycleTests", dependencies: ["TestSupport", "Lifecycle", "Clocks"], swiftSettings: strict),
        .testTarget(name: "MicroHTTPTests", dependencies: ["TestSupport", "MicroHTTP", "Lifecycle", "Clocks"], swiftSettings: strict),
        .testTarget(name: "SIWAJobsTests", dependencies: ["TestSupport", "SIWACore", "SIWAJobs", "AppleID", "Queue", "Clocks", "Metrics", "Lifecycle"], swiftSettings: strict),
        .testTarget(name: "SandboxTests", dependencies: ["TestSupport", "Sandbox", "MicroHTTP", "AppleID", "SIWACrypto"], swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["TestSupport", "Clocks", "SIWAJobs", "Queue", "AppleID", "Postgres", "SIWACrypto", "Sandbox", "MicroHTTP", "EmbeddedSQL", "Metrics"],
            swiftSettings: strict
        ),
    ]
)
