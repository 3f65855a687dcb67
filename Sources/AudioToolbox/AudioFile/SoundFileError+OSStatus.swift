import CAudioToolbox
import Glibc
import SoundFile

/// libsndfile and file-system failures as Apple's result codes (used by `status(for:)`).
extension SoundFileError: OSStatusConvertible {
    var osStatus: OSStatus {
        guard let errno else {
            // libsndfile refused the content itself.
            return kAudioFileInvalidFileError
        }
        switch errno {
        case ENOENT: return kAudioFileFileNotFoundError
        case EACCES, EPERM, EROFS, ETXTBSY: return kAudio_FilePermissionError
        case EEXIST: return dupFNErr
        case EISDIR, ENOTDIR, ENAMETOOLONG, ELOOP, EINVAL: return kAudio_BadFilePathError
        case ENOSPC, EDQUOT, EFBIG: return dskFulErr
        case EMFILE, ENFILE: return kAudio_TooManyFilesOpenError
        case ENOMEM: return kAudio_MemFullError
        case EBADF: return kAudioFileNotOpenError
        default: return ioErr
        }
    }
}
