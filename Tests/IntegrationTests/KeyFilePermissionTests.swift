import Foundation
import Postgres
import Testing
@testable import SIWAJobs

/// Issue #13: a key file that group or others may access gets a warning from `doctor` and a
/// refusal from `work`, unless `--allow-insecure-key-permissions`; through the binary.
@Suite(.serialized) struct KeyFilePermissionTests {
    @Test(arguments: ["SIWA_KEY_FILE", "SIWA_TOKEN_KEY_FILE"])
    func aGroupReadableKeyIsWarnedAboutByDoctorAndRefusedByWorkUnlessAllowed(_ variable: String) async throws {
        var world = try await SIWAWorld.create()
        try await world.seed(accounts: 10, revokedFraction: 0)
        let job = try await world.enqueue()
        var env = world.environment
        let path: String
        if variable == "SIWA_TOKEN_KEY_FILE" {
            path = world.directory.appendingPathComponent("token.key").path
            try Data(world.tokenKeyHex.utf8).write(to: URL(fileURLWithPath: path))
            env.removeValue(forKey: "SIWA_TOKEN_KEY")
            env["SIWA_TOKEN_KEY_FILE"] = path
        } else {
            path = world.keyFile
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)

        let doctor = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(doctor.stdout.contains("warn  key file permissions"), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("\(variable) '\(path)' has mode 0640, so group or others may access it"), "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("FAIL"), "the key itself is fine: \(doctor.stdout)")

        let refused = try await BinaryProcess.run(["work", "--drain"], environment: env)
        #expect(refused.status == 78, "\(refused.stdout) \(refused.stderr.suffix(1500))")
        #expect((refused.stdout + refused.stderr).contains("has mode 0640, so group or others may access it: chmod 600 it"),
                "\(refused.stdout) \(refused.stderr.suffix(1500))")
        let charged: Int = try await world.database.scalar("""
            SELECT ((SELECT count(*) FROM siwa.job_items WHERE job_id = \(job.jobID) AND (attempt > 0 OR state <> 'available'))
                    + (SELECT count(*) FROM siwa.results WHERE job_id = \(job.jobID)))::int
            """)
        #expect(charged == 0)

        let allowed = try await BinaryProcess.run(["work", "--drain", "--allow-insecure-key-permissions"], environment: env)
        #expect(allowed.status == 0, "\(allowed.stdout) \(allowed.stderr.suffix(1500))")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let quiet = try await BinaryProcess.run(["doctor"], environment: env)
        #expect(!quiet.stdout.contains("key file permissions"), "\(quiet.stdout)")
        await world.tearDown()
    }
}
