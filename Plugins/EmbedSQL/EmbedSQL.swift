import Foundation
import PackagePlugin

/// Build-tool plugin: embeds every `sql/*.sql` file of the package into the target it is applied
/// to, as one generated Swift source (`SQLFile.<name>` constants and `SQLFile.all`, in file-name
/// order), so the binary can migrate without the source tree and no copy of the SQL is checked in.
/// The text is embedded byte for byte (the tool refuses a file that is not UTF-8).
///
/// A file added to or edited in sql/ is picked up by the next build. SwiftPM re-evaluates plugins
/// only when the package changes, so after removing or renaming a file of sql/ (never done to a
/// released migration) run `swift package clean` or touch `Package.swift`.
@main
struct EmbedSQL: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        let folder = context.package.directoryURL.appending(path: "sql")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "SQLFile+Embedded.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) files of sql/ into \(target.name)",
                executable: try context.tool(named: "EmbedSQLTool").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output]),
        ]
    }
}
