"""Errors raised by triton_metal, named as Triton names them so that ports keep their `except`s.

Every error that concerns a kernel carries a `Loc` so the message can show the source line and a
caret under the offending column.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Loc:
    """A position in a kernel's Python source (1-based line, 0-based column)."""

    file: str
    line: int
    col: int = 0
    def_line: int = field(default=0, compare=False)
    """The line of the `def` of the function holding the position (0: not known)."""
    def_indent: int = field(default=0, compare=False)
    """That `def`'s indentation in the file."""

    @property
    def in_function(self) -> str | None:
        """Triton's `at LINE:COL:` for the position: the line counted from the function's `def`
        (1), the column in its dedented source; None when the function is not known."""
        if not self.def_line:
            return None
        return f"at {self.line - self.def_line + 1}:{self.col - self.def_indent}:"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"


class TritonError(Exception):
    """Base class of every error triton_metal raises on purpose."""


class CompilationError(TritonError):
    """A kernel cannot be compiled: the message names the kernel, the line, the reason and a fix."""

    def __init__(
        self,
        message: str,
        loc: Loc | None = None,
        hint: str | None = None,
        kernel: str | None = None,
        source_line: str | None = None,
        callee: CalleeError | None = None,
    ) -> None:
        self.reason = message
        self.loc = loc
        self.hint = hint
        self.kernel = kernel
        self.source_line = source_line
        self.callee = callee
        """Set on the error at a `@jit` call's site when the callee failed (its error is the
        `__cause__`, as Triton chains it): the callee and where it failed."""
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"in kernel '{self.kernel}'" if self.kernel else "in kernel"
        parts: list[str] = []
        if self.loc is not None:
            within = self.loc.in_function
            parts.append(f"{self.loc}: {head}" + (f", {within}" if within else ""))
            line = self.source_line
            if line is None:
                line = linecache.getline(self.loc.file, self.loc.line).rstrip("\n")
            if line:
                stripped = line.lstrip()
                indent = len(line) - len(stripped)
                parts.append("    " + stripped)
                parts.append("    " + " " * max(self.loc.col - indent, 0) + "^")
        elif self.kernel:
            parts.append(head)
        parts.append(f"error: {self.reason}")
        if self.callee is not None:
            parts.append(self.callee.note())
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)

    @property
    def error_message(self) -> str:
        """The reason alone (Triton's attribute of this name)."""
        return self.reason

    def with_context(self, loc: Loc | None = None, kernel: str | None = None) -> CompilationError:
        """Fill in the location and kernel if the raiser did not know them (innermost wins)."""
        if (self.loc is not None or loc is None) and (self.kernel is not None or kernel is None):
            return self
        located = type(self)(
            self.reason,
            self.loc if self.loc is not None else loc,
            self.hint,
            self.kernel if self.kernel is not None else kernel,
            self.source_line,
            self.callee,
        )
        located.__cause__ = self.__cause__  # Triton's own exception for the mistake, if any
        return located

    def at_call_site(self, callee: str) -> CompilationError:
        """The error a `@jit` call reports when `callee`, inlined there, failed with this one:
        the same kind, reason and hint, to be located at the call; this error is its cause."""
        through = (self.callee.name, *self.callee.through) if self.callee is not None else ()
        outer = type(self)(self.reason, hint=self.hint, callee=CalleeError(callee, self.innermost.loc, through))
        outer.__cause__ = self
        return outer

    @property
    def innermost(self) -> CompilationError:
        """The error where the mistake is: through the call sites' errors to the callee's."""
        error: CompilationError = self
        while error.callee is not None and isinstance(error.__cause__, CompilationError):
            error = error.__cause__
        return error

    def __reduce__(self):  # keep it picklable (exceptions with custom __init__ are not by default)
        return (type(self), (self.reason, self.loc, self.hint, self.kernel, self.source_line, self.callee))


@dataclass(frozen=True)
class CalleeError:
    """Where the `@jit` function called at an error's site failed."""

    name: str
    """The function called at the site."""
    loc: Loc | None
    """Where the mistake is: in `name`, or in the last of `through`."""
    through: tuple[str, ...] = ()
    """The functions `name` called, one inside the other, down to the one holding `loc`
    (empty when the mistake is in `name` itself)."""

    def note(self) -> str:
        where = f" at {self.loc}" if self.loc is not None else ""
        within = self.loc.in_function if self.loc is not None else None
        at = where + (f" ({within[:-1]})" if within else "")
        if not self.through:
            return f"note: the error is in '{self.name}' (called here){at}; that error is this one's cause"
        calls = " -> ".join(f"'{n}'" for n in self.through)
        return (f"note: the error is in '{self.through[-1]}'{at}, reached through '{self.name}' (called here) -> "
                f"{calls}; that error ends this one's chain of causes")


class CompileTimeAssertionFailure(CompilationError):
    """`tl.static_assert` failed."""


class UnsupportedLanguageConstruct(CompilationError):
    """Python syntax or a Triton feature triton_metal refuses (from the refusal catalogue)."""


class OutOfResources(TritonError):
    """A kernel needs more of a hardware resource than an Apple GPU has (threadgroup memory, threads)."""

    def __init__(self, required: int, limit: int, name: str) -> None:
        self.required = required
        self.limit = limit
        self.name = name
        super().__init__(
            f"out of resource: {name}, required: {required}, hardware limit: {limit}. "
            "Reducing block sizes or `num_stages` may help."
        )

    def __reduce__(self):
        return (type(self), (self.required, self.limit, self.name))


class InterpreterError(TritonError):
    """An error raised while a kernel runs in the NumPy interpreter (out-of-bounds access, ...)."""


class OutOfBoundsError(TritonError, IndexError):
    """A kernel accessed an array argument outside its elements. Both the emulator (bounds-checked
    builds) and the interpreter raise it, naming the kernel, the line, the argument and the index."""


class InterpreterOutOfBounds(InterpreterError, OutOfBoundsError):
    """The interpreter's out-of-bounds access (`argument`, `index` and `extent`, in elements of
    the argument, when the access is known; the launch words the message)."""

    def __init__(self, message: str, argument: str = "", index: int = 0, extent: int = 0) -> None:
        self.argument = argument
        self.index = index
        self.extent = extent
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (str(self), self.argument, self.index, self.extent))


def out_of_bounds_message(
    kernel: str, argument: str, index: int, extent: int, file: str, line: int,
    program: tuple[int, int, int], source: str = "",
) -> str:
    """The one wording of an out-of-bounds access, on the emulator (its runtime's fields, read
    back with `OUT_OF_BOUNDS`) and in the interpreter: the Python kernel, the argument, the first
    offending index (in the argument's elements), the buffer's extent, the kernel line of the
    access and the program, then that line quoted."""
    x, y, z = program
    text = (
        f"kernel '{kernel}': out-of-bounds access to '{argument}' at index {index} (the buffer has "
        f"{extent} element{'' if extent == 1 else 's'}) at {file}:{line}, program ({x}, {y}, {z})"
    )
    if source.strip():
        text += f"\n    {line} | {source.strip()}"
    return text


OUT_OF_BOUNDS = re.compile(
    r"out-of-bounds access to '(?P<argument>[^']*)' at index (?P<index>-?\d+) \(the buffer has "
    r"(?P<extent>\d+) elements?\) at (?P<file>.+):(?P<line>\d+), (?:thread \(\d+,\d+,\d+\) of )?"
    r"threadgroup \((?P<x>\d+),(?P<y>\d+),(?P<z>\d+)\)"
)
"""The emulator runtime's report of a failed bounds check (`tm_rt_out_of_bounds`)."""


class DeviceAssertionError(TritonError, AssertionError):
    """A `tl.device_assert` failed in a compiled kernel (debug builds); raised after the launch,
    naming the kernel, the assert's source line and the program that failed it."""


class LaunchError(TritonError, ValueError):
    """Bad arguments to `kernel[grid](...)`, found before anything runs."""


class NumWarpsError(LaunchError, AssertionError):
    """A `num_warps` launch option that is not a power of two from 1 to 32. Also an
    `AssertionError`, the type of Triton's own check ("num_warps must be a power of 2")."""


class BufferLimitError(OutOfResources, LaunchError):
    """A compiled kernel binds more buffers than Metal's 31 per kernel; refused for every backend
    when the variant is compiled, before anything runs (`backends/metal/plan.py`)."""

    def __init__(self, message: str, required: int, limit: int) -> None:
        self.required = required
        self.limit = limit
        self.name = "buffers"
        self.message = message
        Exception.__init__(self, message)

    def __reduce__(self):
        return (type(self), (self.message, self.required, self.limit))


class OpError(LaunchError):
    """A `triton_metal.op` called with bad arrays, or whose launcher or backward returned the
    wrong values; the message names the op and the argument."""


def internal_error(message: str) -> AssertionError:
    """An invariant of triton_metal itself broke: this is our bug, not the user's."""
    return AssertionError(f"triton_metal internal error: {message} (please report this as a bug)")
