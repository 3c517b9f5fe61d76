import Commands
import Foundation
import SIWACore
import SIWAJobs

/// `siwa-jobs notifications send`: asks the sandbox to sign N notifications cycling through the
/// four types and both encodings (`NotificationMix`), about the given subs in turn, and POSTs
/// them to a receiver.
enum NotificationsSendCommand: Command {
    static let to = Declare.option("to", "URL", .string, help: "the receiver's URL", required: true)
    static let sandbox = Declare.option("sandbox", "URL", CommonOptions.sandboxURL, help: "the sandbox that signs the notifications", required: true)
    static let clientID = Declare.option("client-id", "C", .appleClientID, help: "the audience (aud) of the notifications", required: true)
    static let sub = Declare.option("sub", "S", .string, help: "the account the notifications are about")
    static let subsFile = Declare.option("subs-file", "F", .string, help: "a file of subs, one per line (with or instead of --sub)")
    static let count = Declare.option("count", "N", .integer(in: 1...1_000_000), help: "how many notifications",
                                      defaultText: "one per sub")
    static let concurrency = Declare.value("concurrency", "N", .integer(in: 1...256), default: 8, help: "POSTs in flight at once")

    static let spec = CommandSpec(
        "send", abstract: "sandbox: sign a mix of notifications and POST them to a receiver",
        discussion: "Exit 1 when any POST was not answered 2xx.",
        options: [to, sandbox, clientID, sub, subsFile, count, concurrency], environment: [EnvironmentDocs.caFile])

    static var usesDatabase: Bool { false }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) async throws -> ExitCode {
        let receiverURL = try arguments.required(to)
        let sandboxURL = try arguments.required(sandbox)
        let audience = try arguments.required(clientID)
        var subs: [String] = arguments[sub].map { [$0] } ?? []
        if let file = arguments[subsFile] {
            let data: [UInt8]
            // At most 64 MiB (a million subs): /dev/zero or a wrong file is refused (66), not read until memory runs out.
            do { data = try InputFile.read(file, limit: 64 << 20, stdin: true) } catch { throw error.named(by: "--subs-file") }
            subs += String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        }
        guard !subs.isEmpty else { throw arguments.usageError("notifications send: give --sub S or --subs-file F") }
        let total = arguments[count] ?? subs.count
        let specs = (0..<total).map { NotificationMix.spec(index: $0, sub: subs[$0 % subs.count], clientID: audience) }
        let admin = SandboxAdminClient(baseURL: sandboxURL, transport: try context.configuration.httpTransport(maxConnectionsPerHost: 4))
        var payloads: [String] = []
        for start in stride(from: 0, to: specs.count, by: 1000) {
            payloads += try await admin.signNotifications(Array(specs[start..<min(start + 1000, specs.count)]))
        }
        let statuses = await NotificationSender(url: receiverURL, transport: try context.configuration.httpTransport(maxConnectionsPerHost: 16)).send(payloads, concurrency: arguments[concurrency])
        let summary = statuses.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        say("sent \(payloads.count) notifications: \(summary)")
        guard statuses.keys.allSatisfy({ (200..<300).contains($0) }) else { throw CommandFailure(lines: [], kind: .failed) }
        return .success
    }
}
