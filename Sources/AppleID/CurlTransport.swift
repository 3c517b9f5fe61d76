/// `HTTPTransport` on the libcurl multi interface, driven by ONE dedicated thread
/// (see reference/swift-linux.md §4: ~2.7× URLSession's throughput at 6× less CPU).
///
/// - Submissions go through a locked queue plus `curl_multi_wakeup`; each transfer resumes its
///   continuation from the loop thread.
/// - Connections are kept alive and reused (the multi handle's connection cache; easy handles
///   are recycled); at most `maxConnectionsPerHost` per host, extra transfers queue inside curl.
/// - The HTTP version and connection caps follow `policy` (`ConnectionPolicy`): HTTP/1.1
///   keep-alive, or HTTP/2 multiplexed over TLS for hosts that offer it.
/// - Task cancellation aborts the transfer (`withTaskCancellationHandler`), which then throws
///   `TransportError(kind: .cancelled)`.
/// - Redirects are not followed. Responses larger than `maxResponseBytes` fail with `.other`.
/// - HTTPS always verifies the peer and its host name (`TLSTrust`); a refused certificate
///   throws `TransportError(kind: .certificate)` naming the cause.
public final class CurlTransport: HTTPTransport {
    private let engine: CurlEngine?
    private let maxResponseBytes: Int
    /// The HTTP version and connection caps in use.
    public let policy: ConnectionPolicy
    /// The CAs this transport trusts (verification is always on).
    public let trust: TLSTrust

    /// - Parameters:
    ///   - maxConnectionsPerHost: CURLMOPT_MAX_HOST_CONNECTIONS (default 512; HTTP/2 caps it at
    ///     `ConnectionPolicy.http2ConnectionCap`).
    ///   - httpVersion: the HTTP version to ask for (default `HTTPVersion.default`).
    ///   - caBundlePath: a PEM file of CA certificates to trust IN ADDITION to the system store (a
    ///     private CA, the sandbox's throwaway CA: `SIWA_CA_FILE`), or nil for the system store
    ///     alone. Verification is always on (`TLSTrust`).
    ///   - systemCAPath: the system's hashed CA directory kept beside `caBundlePath`; default
    ///     libcurl's built-in one (`TLSTrust.systemCAPath`).
    ///   - maxResponseBytes: response body cap in bytes (default 4 MiB).
    public init(maxConnectionsPerHost: Int = 512, httpVersion: HTTPVersion = .default, caBundlePath: String? = nil,
                systemCAPath: String? = TLSTrust.systemCAPath, maxResponseBytes: Int = 4 << 20) {
        let trust = TLSTrust(extraCAFile: caBundlePath, systemCAPath: systemCAPath)
        self.trust = trust
        self.policy = ConnectionPolicy(httpVersion: httpVersion, maxConnectionsPerHost: maxConnectionsPerHost)
        self.engine = CurlEngine(policy: policy, trust: trust)
        self.maxResponseBytes = max(1024, maxResponseBytes)
        engine?.start()
    }

    deinit { engine?.stop(wait: false) }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        guard let engine else {
            throw TransportError(kind: .other, message: "libcurl could not be initialised")
        }
        let transfer = CurlTransfer(id: engine.nextID(), request: request, maxResponseBytes: maxResponseBytes)
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                transfer.continuation = continuation
                if !engine.submit(transfer) {
                    transfer.complete(.failure(TransportError(kind: .other, message: "transport shut down")))
                }
            }
        } onCancel: {
            transfer.cancelled.store(true, ordering: .releasing)
            engine.cancel(transfer.id)
        }
        return try result.get()
    }

    /// The transport's loop thread as a task executor (nil if libcurl did not start): a task
    /// that prefers it runs on the thread that drives its requests (`CurlEngine`'s TaskExecutor).
    public var taskExecutor: (any TaskExecutor)? { engine }

    /// Responses by HTTP version and connections opened so far (zeros if libcurl did not start).
    public var statistics: TransportStatistics { engine?.counters.snapshot ?? TransportStatistics() }

    /// Stops the loop thread and waits for it; pending and later requests fail with `.other`
    /// ("transport shut down"). Idempotent.
    public func shutdown() {
        engine?.stop(wait: true)
    }
}
