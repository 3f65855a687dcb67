import CAudioToolbox
import SoundFile
import Synchronization

/// Creating and growing container files: the one place that opens a libsndfile file for
/// writing, for Audio File Services (AudioFileCreateWithURL) and take files (AudioTakeFile)
/// alike. What a container holds and how its samples are stored is `WritableContainer`'s
/// table (`storage(for:)`); the samples go in through `SampleTransfer.write`.
enum ContainerFile {
    /// How a new file keeps its header up to date.
    enum HeaderUpdates {
        /// After every write (libsndfile's SFC_SET_UPDATE_HEADER_AUTO), where the container
        /// allows it: Audio File Services, whose callers expect a file that opens at any time.
        case everyWrite
        /// When asked (`SoundFile.updateHeaderNow`): take files, once a second, with their sync.
        case onRequest
    }

    /// Creates `path` for `layout` in `container`, stored as `format` (from `storage(for:)`).
    /// - Parameters:
    ///   - readable: opened for reading back as well (SFM_RDWR) where libsndfile can.
    ///   - growsIntoRF64: a WAVE file written as libsndfile's RF64 with automatic downgrade:
    ///     plain WAVE below 4 GiB (a JUNK chunk keeps the room for the 64-bit sizes, the
    ///     format chunk is WAVE_FORMAT_EXTENSIBLE), RF64 past it. Take files; a file made
    ///     through AudioFileCreateWithURL keeps the plain 44-byte WAVE header and its limit.
    /// - Throws: `SoundFileError` (errno set for what the file system refused).
    static func create(path: String, container: WritableContainer, layout: PCMLayout, format: SoundFile.Format,
                       replacing: Bool, readable: Bool, headerUpdates: HeaderUpdates,
                       growsIntoRF64: Bool = false) throws(SoundFileError) -> SoundFile {
        let rf64 = growsIntoRF64 && container == .wave
        let stored = rf64 ? SoundFile.Format(.rf64, format.subtype, format.endianness) : format
        let info = SoundFile.Info(sampleRate: Int(layout.sampleRate), channelCount: layout.channelCount, format: stored)
        let sound = try SoundFile(path: path, mode: readable && container.opensForReadWrite ? .readWrite : .write,
                                  format: info, replacing: replacing)
        if rf64 { sound.setRF64AutoDowngrade(true) }
        if headerUpdates == .everyWrite, container.updatesHeaderWhileWriting { sound.setUpdatesHeaderAutomatically(true) }
        return sound
    }

    /// Bytes of audio a file of `container` at `path` can describe: WAVE, AIFF, AIFC and NeXT
    /// headers count bytes in 32 bits (less room for the header's other chunks); nil for
    /// RF64, Wave64, CAF and a WAVE that grows into RF64, and for the encoded containers.
    static func audioByteLimit(_ container: WritableContainer, growsIntoRF64: Bool = false, path: String) -> Int64? {
        let limit: Int64
        switch container {
        case .wave where !growsIntoRF64, .aiff, .aifc, .next: limit = Int64(UInt32.max) - 65536
        default: return nil
        }
        let lowered = testLimits.withLock { limits in limits.first { path.hasPrefix($0.key) }?.value }
        return lowered.map { min($0, limit) } ?? limit
    }

    /// Lower limits for the files under some directories (tests: the limit is 4 GiB otherwise).
    static let testLimits = Mutex<[String: Int64]>([:])

    /// How many of `frames` frames, written at frame `start`, stay within `limit` bytes of audio.
    static func framesWithin(_ limit: Int64?, start: Int64, frames: Int, bytesPerFrame: Int) -> Int {
        guard let limit else { return frames }
        let room = limit / Int64(bytesPerFrame) - start
        return Int(max(0, min(Int64(frames), room)))
    }
}
