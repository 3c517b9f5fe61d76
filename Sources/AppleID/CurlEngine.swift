import CCurl
import Dispatch
import Foundation
import Synchronization

/// Owns one CURLM handle and the single thread that drives it. Other threads talk to the loop
/// only through `inbox` (a Mutex) plus the event loop's wake-up (an eventfd); code running on the
/// loop thread itself (tasks that prefer it as their executor, see the `TaskExecutor` extension)
/// queues its jobs and transfers in `localJobs` and `localSubmissions`. Everything else below is
/// touched by the loop thread alone, which is why the class is `@unchecked Sendable`.
///
/// The loop is libcurl's socket interface (`curl_multi_socket_action`) on epoll (`ccurl_events_*`
/// in the CCurl shim): each step handles only the connections that are ready. `curl_multi_poll`
/// with `curl_multi_perform` scanned every open connection in the kernel and in libcurl on every
/// wake-up, which at C=512 was the largest cost of the worker's CPU (issue #12).
final class CurlEngine: @unchecked Sendable {
    private static let globalInit: Bool = curl_global_init(ccurl_global_all()) == CURLE_OK

    private let multi: UnsafeMutableRawPointer
    /// epoll, the wake-up eventfd and the next timeout, shared with libcurl's callbacks.
    let events: UnsafeMutablePointer<ccurl_events>
    let inbox = Mutex(Inbox())
    private let idCounter = Atomic<Int>(0)
    private let exited = DispatchSemaphore(value: 0)
    /// The loop thread (`pthread_self`), once it runs; 0 before.
    let loopThread = Atomic<UInt>(0)
    /// Loop-thread state: jobs enqueued and transfers submitted by code running on the loop
    /// thread itself (no lock, no wake-up).
    var localJobs: [UnownedJob] = []
    private var localSubmissions: [CurlTransfer] = []
    /// The CAs trusted, with verification always on (`TLSTrust`).
    let trust: TLSTrust
    /// The HTTP version and connection caps (`ConnectionPolicy`).
    let policy: ConnectionPolicy
    /// Responses by HTTP version and connections opened (`TransportStatistics`).
    let counters = TransportCounters()
    /// `CURLOPT_NOPROXY`: loopback addresses never go through a proxy (`http_proxy`,
    /// `https_proxy`), then whatever `no_proxy` / `NO_PROXY` lists (the option replaces them).
    let noProxy: String
    private let maxIdleHandles = 128
    // Loop-thread state.
    private var active: [Int: CurlTransfer] = [:]
    private var byHandle: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles between transfers, still configured (`prepareHandle`): a reused handle gets
    /// only the options that change per request (`configure`).
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// HTTP/2 was asked for and the server answered in HTTP/1.1: the HTTP/1.1 caps apply and new
    /// transfers no longer wait to multiplex (`noteResponseVersion`). The engine talks to one
    /// host (Apple's), so one answer decides.
    private(set) var servedHTTP1 = false
    /// Each easy handle's own state: its `CURLOPT_ERRORBUFFER` and the options it holds that vary.
    var handles: [UnsafeMutableRawPointer: HandleState] = [:]
    /// `CURLOPT_HTTPHEADER` lists kept for the engine's life, one per header set seen (the client
    /// sends the same two or three headers every time); at most `maxSharedHeaderLists`.
    var sharedHeaderLists: [(headers: [(String, String)], list: UnsafeMutablePointer<curl_slist>)] = []
    let maxSharedHeaderLists = 8
    /// The last URL configured and `allowedProtocol(for:)` of it.
    var lastURLVerdict: (url: String, protocols: String?)?

    init?(policy: ConnectionPolicy, trust: TLSTrust) {
        guard Self.globalInit, let multi = curl_multi_init() else { return nil }
        let events = UnsafeMutablePointer<ccurl_events>.allocate(capacity: 1)
        guard ccurl_events_open(events, multi) == 0 else {
            events.deallocate()
            curl_multi_cleanup(multi)
            return nil
        }
        self.multi = multi
        self.events = events
        self.policy = policy
        self.trust = trust
        let listed = [getenv("no_proxy"), getenv("NO_PROXY")].compactMap { $0.map { String(cString: $0) } }.filter { !$0.isEmpty }
        self.noProxy = (["127.0.0.0/8", "::1"] + listed.prefix(1)).joined(separator: ",")
        events.pointee.linger_us = policy.coalescingMicroseconds
        for (option, value) in policy.multiOptions { _ = ccurl_multi_setopt_long(multi, option, value) }
    }

    /// Records the HTTP version (`CURL_HTTP_VERSION_*`) of an answer. The first HTTP/1.x answer
    /// to an HTTP/2 request lifts the HTTP/2 connection cap to the HTTP/1.1 one; transfers
    /// libcurl held back for the lower cap start as others finish. Loop thread only.
    func noteResponseVersion(_ curlVersion: Int) {
        guard !servedHTTP1, policy.httpVersion == .http2,
              curlVersion == Int(CURL_HTTP_VERSION_1_1) || curlVersion == Int(CURL_HTTP_VERSION_1_0) else { return }
        servedHTTP1 = true
        for (option, value) in policy.http1FallbackMultiOptions { _ = ccurl_multi_setopt_long(multi, option, value) }
    }

    func nextID() -> Int { idCounter.wrappingAdd(1, ordering: .relaxed).newValue }

    func start() {
        let thread = Thread { [self] in self.run() }
        thread.name = "siwa-curl"
        thread.start()
    }

    /// Queues a transfer for the loop. Returns false once the engine is shutting down. On the
    /// loop thread it is only appended (no lock): the loop begins it after the jobs it runs, or,
    /// once stopping, fails it with the rest (`run`'s shutdown).
    func submit(_ transfer: CurlTransfer) -> Bool {
        if isLoopThread {
            localSubmissions.append(transfer)
            return true
        }
        return inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.submissions.append(transfer)
            inbox.wake(events)
            return true
        }
    }

    /// Asks the loop to abort transfer `id` (no-op if it already finished).
    func cancel(_ id: Int) {
        inbox.withLock { inbox in
            guard !inbox.stopped else { return }
            inbox.cancellations.append(id)
            ccurl_events_wake(events)
        }
    }

    /// Stops the loop: in-flight and queued transfers fail with `.other`. Waits for the thread
    /// to exit when `wait` is true.
    func stop(wait: Bool) {
        let first = inbox.withLock { inbox -> Bool in
            guard !inbox.stopping else { return false }
            inbox.stopping = true
            ccurl_events_wake(events)
            return true
        }
        if first && wait { exited.wait() }
    }

    private func run() {
        // All socket I/O happens on this thread: block SIGPIPE here so a peer closing a TLS
        // connection yields EPIPE instead of killing the process (CURLOPT_NOSIGNAL leaves
        // SIGPIPE to the application). The mask is per-thread; the rest of the process is untouched.
        var pipeOnly = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeOnly, nil)
        ccurl_name_this_thread("siwa-curl")   // Foundation's `Thread.name` leaves the OS thread's name as it was
        loopThread.store(pthread_self(), ordering: .releasing)
        // What the inbox and the local queues hand over, swapped in and emptied after use, so
        // their buffers are reused rather than copied on every step.
        var submissions: [CurlTransfer] = [], cancellations: [Int] = [], jobs: [UnownedJob] = []
        while true {
            let stopping = inbox.withLock { inbox in
                swap(&submissions, &inbox.submissions)
                swap(&cancellations, &inbox.cancellations)
                swap(&jobs, &inbox.jobs)
                inbox.woken = false
                return inbox.stopping
            }
            runJobs(jobs)
            jobs.removeAll(keepingCapacity: true)
            swap(&jobs, &localJobs)   // resumed here by the last step's completions
            runJobs(jobs)
            jobs.removeAll(keepingCapacity: true)
            for transfer in submissions { begin(transfer) }
            submissions.removeAll(keepingCapacity: true)
            swap(&submissions, &localSubmissions)   // submitted by the jobs just run
            for transfer in submissions { begin(transfer) }
            submissions.removeAll(keepingCapacity: true)
            for id in cancellations {
                if let transfer = active[id] {
                    finish(transfer, .failure(TransportError(kind: .cancelled, message: "request cancelled")))
                }
            }
            cancellations.removeAll(keepingCapacity: true)
            if stopping { break }
            // Jobs resumed by the cancellations just made run at once; otherwise wait for I/O.
            _ = ccurl_events_step(events, multi, localJobs.isEmpty && localSubmissions.isEmpty ? 1000 : 0)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard ccurl_msg_is_done(message) != 0, let easy = message.pointee.easy_handle,
                      let transfer = byHandle[easy] else { continue }
                let code = ccurl_msg_result(message)
                finish(transfer, Result { () throws(TransportError) in try response(for: transfer, code: code) })
            }
        }
        let shutdown = TransportError(kind: .other, message: "transport shut down")
        for transfer in Array(active.values) { finish(transfer, .failure(shutdown)) }
        let (leftovers, waiting) = inbox.withLock { inbox -> ([CurlTransfer], [UnownedJob]) in
            inbox.stopped = true
            defer { inbox.submissions.removeAll(); inbox.jobs.removeAll() }
            return (inbox.submissions, inbox.jobs)
        }
        for transfer in leftovers + localSubmissions { transfer.complete(.failure(shutdown)) }
        localSubmissions.removeAll()
        loopThread.store(0, ordering: .releasing)
        // Tasks that prefer this engine run on the global executor from now on.
        for job in waiting + localJobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        localJobs.removeAll()
        for easy in idleHandles { cleanup(easy) }
        idleHandles.removeAll()
        for shared in sharedHeaderLists { curl_slist_free_all(shared.list) }
        sharedHeaderLists.removeAll()
        curl_multi_cleanup(multi)
        ccurl_events_close(events)
        events.deallocate()
        exited.signal()
    }

    private func begin(_ transfer: CurlTransfer) {
        if transfer.cancelled.load(ordering: .acquiring) {
            transfer.complete(.failure(TransportError(kind: .cancelled, message: "request cancelled")))
            return
        }
        guard let easy = idleHandles.popLast() ?? newHandle() else {
            transfer.complete(.failure(TransportError(kind: .other, message: "curl_easy_init failed")))
            return
        }
        transfer.easy = easy
        let configured = configure(easy, for: transfer)
        guard configured == CURLE_OK, curl_multi_add_handle(multi, easy) == CURLM_OK else {
            let reason = configured == CURLE_OK ? "curl_multi_add_handle failed" : Self.describe(configured)
            recycle(transfer)
            transfer.complete(.failure(TransportError(kind: .other, message: reason)))
            return
        }
        active[transfer.id] = transfer
        byHandle[easy] = transfer
    }

    private func finish(_ transfer: CurlTransfer, _ result: Result<HTTPResponse, TransportError>) {
        if let easy = transfer.easy { curl_multi_remove_handle(multi, easy) }
        active[transfer.id] = nil
        recycle(transfer)
        transfer.complete(result)
    }

    /// Puts a finished transfer's handle back among the idle ones, configured as it is (the
    /// next `configure` replaces every per-request option), or frees it beyond `maxIdleHandles`.
    /// A header list of the transfer's own (one not shared) is freed.
    private func recycle(_ transfer: CurlTransfer) {
        if let list = transfer.headerList { curl_slist_free_all(list) }
        transfer.headerList = nil
        guard let easy = transfer.easy else { return }
        byHandle[easy] = nil
        transfer.easy = nil
        if idleHandles.count < maxIdleHandles {
            idleHandles.append(easy)
        } else {
            cleanup(easy)
        }
    }

    /// A new easy handle with the options every request shares (`prepareHandle`), or nil.
    private func newHandle() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        let state = HandleState()
        handles[easy] = state
        guard prepareHandle(easy, errorBuffer: state.errorBuffer) == CURLE_OK else {
            cleanup(easy)
            return nil
        }
        return easy
    }

    /// The text libcurl left in `easy`'s error buffer for its last failure, or nil.
    func errorText(of easy: UnsafeMutableRawPointer) -> String? {
        guard let buffer = handles[easy]?.errorBuffer, buffer[0] != 0 else { return nil }
        return String(cString: buffer)
    }

    private func cleanup(_ easy: UnsafeMutableRawPointer) {
        curl_easy_cleanup(easy)
        handles.removeValue(forKey: easy)
    }
}

/// One easy handle's own state, for the loop thread. `errorBuffer` is its `CURLOPT_ERRORBUFFER`
/// (`CURL_ERROR_SIZE` bytes: libcurl's detailed text of a failure, e.g. which host name a
/// certificate did not match); `protocols` the `CURLOPT_PROTOCOLS_STR` it holds.
final class HandleState {
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
    var protocols: String?

    init() { errorBuffer[0] = 0 }

    deinit { errorBuffer.deallocate() }
}
