"""A small decompiler for the bytecode of Python 3.9-3.13, for the shapes Keras Lambda functions take.

Loaded only by the decompiler program (``_decompile.py``, a separate process under lowered limits), never imported by
mgpu-io itself. It reads xdis' portable code objects (xdis unmarshals any Python's format in pure Python, as data) and
their instruction stream, runs a symbolic stack machine over it that rebuilds a Python AST, and writes it out with
``ast.unparse``. Nothing is compiled, evaluated or run.

What it reads: straight-line functions and lambdas (expressions; assignments, tuple unpacking and augmented
assignments; calls with keyword, ``*`` and ``**`` arguments; attributes; subscripts and slices; ``[*a, *b]``;
list, tuple, set and dict displays), conditional expressions (nested too), ``if`` statements in a ``def``, comparisons
(``in``, ``not in``, ``is``, ``is not``), ``and``/``or``/``not``, nested lambdas, and comprehensions and generator
expressions with one ``for`` and ``if`` filters. Anything else is refused by name, with the opcode it stopped at
(:class:`Unreadable`). Whether a reading is right is proven by recompiling it on the writer's Python
(``tests/lambdas/test_lambda_recompile.py``, ``mgpu-io lambdas --check``: the recompiled bytes are the stored ones).

Python 3.13 writes the same shapes with other instructions: pairs of locals in one instruction
(``LOAD_FAST_LOAD_FAST``, ``STORE_FAST_LOAD_FAST``, ``STORE_FAST_STORE_FAST``: read as the two they stand for),
``TO_BOOL`` before each test (read as part of the test that follows it, and refused anywhere else), the NULL pushed
above a callable instead of below it, ``CALL_KW`` with its keyword names on the stack, ``MAKE_FUNCTION`` of the code
alone with ``SET_FUNCTION_ATTRIBUTE`` giving its defaults, ``CONVERT_VALUE``, ``FORMAT_SIMPLE`` and
``FORMAT_WITH_SPEC`` for an f-string's ``{value!conversion:spec}``, and ``END_FOR`` + ``POP_TOP`` after an inlined
comprehension.

Example:
    >>> Unreadable("SETUP_FINALLY", 12).args[0]
    'SETUP_FINALLY at offset 12'
"""

import ast
import types

#: The Pythons whose bytecode this module reads.
VERSIONS = ((3, 9), (3, 10), (3, 11), (3, 12), (3, 13))
#: At most this many instructions are interpreted per function (a hostile stream cannot loop it).
STEP_LIMIT = 20_000

_BINARY = {
    "ADD": ast.Add, "SUBTRACT": ast.Sub, "MULTIPLY": ast.Mult, "TRUE_DIVIDE": ast.Div, "FLOOR_DIVIDE": ast.FloorDiv,
    "MODULO": ast.Mod, "POWER": ast.Pow, "MATRIX_MULTIPLY": ast.MatMult, "LSHIFT": ast.LShift, "RSHIFT": ast.RShift,
    "AND": ast.BitAnd, "OR": ast.BitOr, "XOR": ast.BitXor,
}  # fmt: skip
#: BINARY_OP's argument (3.11+): the operator, in CPython's NB_* order; 13 and above are the in-place forms.
_BINARY_OP = [ast.Add, ast.BitAnd, ast.FloorDiv, ast.LShift, ast.MatMult, ast.Mult, ast.Mod, ast.BitOr, ast.Pow,
              ast.RShift, ast.Sub, ast.Div, ast.BitXor]  # fmt: skip
_UNARY = {"UNARY_NEGATIVE": ast.USub, "UNARY_POSITIVE": ast.UAdd, "UNARY_NOT": ast.Not, "UNARY_INVERT": ast.Invert}
_COMPARE = {"<": ast.Lt, "<=": ast.LtE, "==": ast.Eq, "!=": ast.NotEq, ">": ast.Gt, ">=": ast.GtE}
_SKIP = {"NOP", "RESUME", "CACHE", "EXTENDED_ARG", "PRECALL", "COPY_FREE_VARS", "MAKE_CELL", "GEN_START",
         "RETURN_GENERATOR"}  # fmt: skip
_COMPREHENSIONS = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"}
#: What a 3.12+ inlined comprehension's exception handler holds (it restores the local it saved, and re-raises).
_CLEANUP = {"SWAP", "POP_TOP", "STORE_FAST", "RERAISE", "END_FOR"}
#: Opcodes that only a running interpreter writes into code (instrumentation, executors): never stored.
_NEVER_STORED = ("INSTRUMENTED_", "ENTER_EXECUTOR", "INTERPRETER_EXIT", "RESERVED")
#: 3.13's instructions of two locals: the two instructions each stands for (the first takes the high four bits).
_PAIRS = {
    "LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
    "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
}
#: What may follow 3.13's TO_BOOL (a test, or ``not``): it is read as part of that instruction.
_TESTED_BY = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "UNARY_NOT")
#: CONVERT_VALUE's argument (3.13): ``!s``, ``!r``, ``!a``.
_CONVERSIONS = {1: ord("s"), 2: ord("r"), 3: ord("a")}


class Unreadable(Exception):
    """Bytecode this decompiler does not read: the opcode and offset where it stopped."""

    def __init__(self, opname, offset, why=""):
        super().__init__(f"{opname} at offset {offset}" + (f" ({why})" if why else ""))


class _Null:
    """The NULL that 3.11+ pushes beside a callable (below it until 3.12, above it from 3.13; and LOAD_METHOD's
    marker below a method)."""


class _Saved:
    """A local that a 3.12 inlined comprehension saved (LOAD_FAST_AND_CLEAR) and restores after it."""

    def __init__(self, name):
        self.name = name


class _Iter:
    """GET_ITER's result: the iterable of a comprehension."""

    def __init__(self, node):
        self.node = node


class _Function:
    """MAKE_FUNCTION's result: a comprehension's code or a nested lambda."""

    def __init__(self, code, defaults):
        self.code, self.defaults = code, defaults


class _Converted:
    """CONVERT_VALUE's result (3.13): a value with its f-string conversion (``!s``, ``!r``, ``!a``), to be
    formatted."""

    def __init__(self, value, conversion):
        self.value, self.conversion = value, conversion


class _Ins:
    """One instruction as the reader runs it: xdis' own, or one of the two that a 3.13 pair stands for."""

    __slots__ = ("arg", "argval", "offset", "opname")

    def __init__(self, opname, arg, argval, offset):
        self.opname, self.arg, self.argval, self.offset = opname, arg, argval, offset


def _unpaired(instructions, version):
    """``instructions`` without CACHE and EXTENDED_ARG; on 3.13, each pair of locals as its two instructions (the
    second at the odd offset after the pair's, which no jump reaches) and each TO_BOOL that a test follows left out
    (``skipped``: the offsets of those, each with the instruction that stands there instead)."""
    found = [i for i in instructions if i.opname not in ("CACHE", "EXTENDED_ARG")]
    if tuple(version) < (3, 13):
        return found, {}
    out, skipped = [], {}
    for n, ins in enumerate(found):
        if ins.opname in _PAIRS:
            names = ins.argval if isinstance(ins.argval, tuple) and len(ins.argval) == 2 else None
            if names is None or not isinstance(ins.arg, int):
                raise Unreadable(ins.opname, ins.offset, "a pair of locals that is not two names")
            first, second = _PAIRS[ins.opname]
            out.append(_Ins(first, ins.arg >> 4, names[0], ins.offset))
            out.append(_Ins(second, ins.arg & 15, names[1], ins.offset + 1))
        elif ins.opname == "TO_BOOL" and n + 1 < len(found) and found[n + 1].opname in _TESTED_BY:
            skipped[ins.offset] = found[n + 1].offset
        else:
            out.append(ins)
    return out, skipped


class _Unpacked:
    """One target of UNPACK_SEQUENCE, waiting for its store."""

    def __init__(self, group, index):
        self.group, self.index = group, index


class _InPlace:
    """An in-place operation (``x += y``), waiting for its store."""

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right


class _Reached:
    """A block ran into its limit (the point where the branches meet)."""

    def __init__(self, stack, body):
        self.stack, self.body = stack, body


class _Returned:
    """A block ended in ``return``."""

    def __init__(self, body):
        self.body = body


class _Jumped:
    """A block ended by jumping to ``target`` (``kind``: ``jump``, ``or``, ``and``, ``false``)."""

    def __init__(self, kind, target, stack, body, value=None, index=None):
        self.kind, self.target, self.stack, self.body, self.value, self.index = kind, target, stack, body, value, index


class _Appended:
    """A comprehension's body reached its append (or yield)."""

    def __init__(self, element, index, filters, key=None):
        self.element, self.index, self.filters, self.key = element, index, filters, key


def _const(value):
    if isinstance(value, tuple):
        return ast.Tuple([_const(item) for item in value], ast.Load())
    if isinstance(value, frozenset):
        return (
            ast.Set([_const(item) for item in sorted(value, key=repr)])
            if value
            else ast.Call(ast.Name("frozenset", ast.Load()), [], [])
        )
    if value is Ellipsis or isinstance(value, (int, float, complex, str, bytes, bool)) or value is None:
        return ast.Constant(value)
    raise Unreadable("LOAD_CONST", -1, f"a constant of type {type(value).__name__}")


def _none(node):
    return isinstance(node, ast.Constant) and node.value is None


class _Step:
    """One instruction being run: its index, opcode, argument and value, and the block it runs in."""

    __slots__ = ("arg", "body", "filters", "i", "limit", "loop", "op", "stack", "val")

    def __init__(self, i, op, arg, val, stack, body, limit, loop, filters):
        self.i, self.op, self.arg, self.val, self.stack = i, op, arg, val, stack
        self.body, self.limit, self.loop, self.filters = body, limit, loop, filters


class Reader:
    """The decompiler for one code object of Python ``version`` (a tuple), given xdis' ``instructions`` of it.

    ``nested(code)`` returns the instructions of a nested code object (a comprehension's or a lambda's).
    """

    def __init__(self, code, version, instructions, nested):
        self.code, self.version, self.nested = code, tuple(version), nested
        for ins in instructions:
            if ins.opname.startswith(_NEVER_STORED):
                raise Unreadable(ins.opname, ins.offset, "an opcode that marshalled code never holds")
        self.ins, skipped = _unpaired(instructions, self.version)
        self.at = {i.offset: n for n, i in enumerate(self.ins)}
        for offset, then in skipped.items():  # a jump to a TO_BOOL (3.13) reaches the test it is part of
            self.at[offset] = self.at[then]
        self.steps = 0
        self.groups = {}
        self.kw_names = ()
        self.visited = set()
        self.pending, self.order = [], {}  # order: when each value was made (keyed by the node, never by its id)

    # --- the whole function ------------------------------------------------------------------------------------
    def statements(self):
        """The function's body as a list of AST statements."""
        result = self.walk(0, None, [])
        if not isinstance(result, _Returned):
            raise self.fail(len(self.ins) - 1, "the function does not end in return")
        body = result.body
        if body and isinstance(body[-1], ast.Return) and body[-1].value is not None and _none(body[-1].value):
            body = body[:-1]  # the implicit `return None` of a def
        if self.code.co_name == "<lambda>" and (len(body) != 1 or not isinstance(body[0], ast.Return)):
            raise self.fail(0, "a lambda's body is one expression")
        for n, ins in enumerate(self.ins):  # code never reached: only a 3.12 comprehension's clean-up may be
            if n not in self.visited and ins.opname not in _CLEANUP and ins.opname not in _SKIP:
                raise self.fail(n, "code that the function's flow does not reach: an exception handler or a loop")
        return body or [ast.Pass()]

    def expression(self):
        """A lambda's expression."""
        [ret] = self.statements()
        return ret.value

    def fail(self, index, why=""):
        ins = self.ins[min(max(index, 0), len(self.ins) - 1)] if self.ins else None
        return Unreadable(ins.opname if ins else "nothing", ins.offset if ins else 0, why)

    # --- blocks -------------------------------------------------------------------------------------------------
    def index(self, offset, at):
        if offset not in self.at:
            raise self.fail(at, f"a jump to offset {offset}, which starts no instruction")
        return self.at[offset]

    def walk(self, start, limit, stack, loop=None):
        """Interpret from instruction ``start`` until offset ``limit`` (a meeting point), a return, or a jump out.

        ``loop``: the offset of the enclosing comprehension's FOR_ITER (its filters jump back there).
        """
        body, i, filters = [], start, []
        stack = list(stack)
        while True:
            if i >= len(self.ins):
                raise self.fail(i, "the code runs past its end")
            ins = self.ins[i]
            if limit is not None and ins.offset == limit:
                return _Reached(stack, body)
            if limit is not None and ins.offset > limit:
                raise self.fail(i, f"a block runs past offset {limit}")
            self.steps += 1
            self.visited.add(i)
            if self.steps > STEP_LIMIT:
                raise self.fail(i, "too many instructions")
            op, arg, val = ins.opname, ins.arg, ins.argval
            op = op.replace("_FORWARD", "").replace("_BACKWARD", "") if op.startswith("POP_JUMP") else op
            if op == "NOP" and not stack and self.version >= (3, 10) and self.code.co_name != "<lambda>":
                # 3.10+ keeps a NOP only for a line that holds no other instruction (`pass`, a bare constant):
                # `pass` compiles to the same bytes, so that the recompiled code is the stored code
                body.append(ast.Pass())
                i += 1
                continue
            if op in _SKIP or (op == "POP_TOP" and i > 0 and self.ins[i - 1].opname == "RETURN_GENERATOR"):
                i += 1
                continue
            try:
                outcome = self.step(i, op, arg, val, stack, body, limit, loop, filters)
            except IndexError:
                raise self.fail(i, "the stack runs empty") from None
            if isinstance(outcome, int):
                i = outcome
                continue
            return outcome

    def step(self, i, op, arg, val, stack, body, limit, loop, filters):
        """Run instruction ``i``; returns the next index, or how the block ended.

        Each opcode has its handler in :attr:`OPCODES` (``POP_JUMP_IF_*`` share one); an opcode with none is refused
        by name. A handler returns ``None`` to go on with the next instruction.
        """
        handler = self.OPCODES.get(op) or (Reader._op_pop_jump if op.startswith("POP_JUMP_IF_") else None)
        if handler is None:
            raise self.fail(i, "not read by mgpu-io's decompiler")
        outcome = handler(self, _Step(i, op, arg, val, stack, body, limit, loop, filters))
        return i + 1 if outcome is None else outcome

    def _push(self, stack, node):
        self.order[node] = len(self.order)  # the order values were computed in (for `a, b = p, q`)
        stack.append(node)

    # --- the opcodes: what each does to the symbolic stack ------------------------------------------------------
    def _op_load_const(self, s):
        self._push(s.stack, self._constant(s.val, s.i))

    def _op_load_name(self, s):
        """LOAD_FAST, LOAD_DEREF, LOAD_NAME, ...: a name."""
        self._push(s.stack, ast.Name(str(s.val), ast.Load()))

    def _op_load_saved(self, s):
        """LOAD_FAST_AND_CLEAR (3.12+): the local an inlined comprehension saves."""
        self._push(s.stack, _Saved(str(s.val)))

    def _op_load_global(self, s):
        if (3, 11) <= self.version < (3, 13) and s.arg & 1:
            self._push(s.stack, _Null())
        self._push(s.stack, ast.Name(str(s.val), ast.Load()))
        if self.version >= (3, 13) and s.arg & 1:  # 3.13: the NULL above the callable
            self._push(s.stack, _Null())

    def _op_push_null(self, s):
        self._push(s.stack, _Null())

    def _op_load_attr(self, s):
        owner = s.stack.pop()
        method = self.version >= (3, 12) and s.arg & 1  # 3.12+'s LOAD_ATTR of a method
        if method and self.version < (3, 13):
            self._push(s.stack, _Null())
        self._push(s.stack, ast.Attribute(self._value(owner, s.i), str(s.val), ast.Load()))
        if method and self.version >= (3, 13):  # 3.13: the NULL (or self) above the method
            self._push(s.stack, _Null())

    def _op_load_method(self, s):
        owner = s.stack.pop()
        self._push(s.stack, _Null())
        self._push(s.stack, ast.Attribute(self._value(owner, s.i), str(s.val), ast.Load()))

    def _op_store_name(self, s):
        """STORE_FAST, STORE_NAME, ...: an assignment (or one of ``a, b = p, q``'s, which the compiler reorders)."""
        i, stack = s.i, s.stack
        value = stack.pop()
        target = ast.Name(str(s.val), ast.Store())
        if self.pending or (stack and isinstance(value, ast.AST) and all(isinstance(v, ast.AST) for v in stack)):
            # `a, b = p, q`: the values were pushed in order, the compiler stores them in any order
            self.pending.append((target, value))
            if not stack:
                order = [self.order.get(value, -1) for _, value in self.pending]
                pairs = sorted(zip(order, self.pending), key=lambda pair: pair[0])
                targets = [target for _, (target, _) in pairs]
                values = [self._value(value, i) for _, (_, value) in pairs]
                s.body.append(ast.Assign([ast.Tuple(targets, ast.Store())], ast.Tuple(values, ast.Load())))
                self.pending = []
        else:
            self._store(target, value, s.body, i)

    def _op_store_attr(self, s):
        owner, value = s.stack.pop(), s.stack.pop()
        self._store(ast.Attribute(self._value(owner, s.i), str(s.val), ast.Store()), value, s.body, s.i)

    def _op_store_subscr(self, s):
        index, owner, value = s.stack.pop(), s.stack.pop(), s.stack.pop()
        target = ast.Subscript(self._value(owner, s.i), self._value(index, s.i), ast.Store())
        self._store(target, value, s.body, s.i)

    def _op_unpack_sequence(self, s):
        """``a, b = value``: one placeholder per target, each waiting for its store."""
        value = self._value(s.stack.pop(), s.i)
        group = len(self.groups)
        self.groups[group] = [value, [None] * s.arg]
        for index in reversed(range(s.arg)):
            self._push(s.stack, _Unpacked(group, index))

    def _op_binary(self, s):
        """BINARY_ADD, BINARY_MULTIPLY, ... (3.9, 3.10): ``left <op> right``."""
        right, left = s.stack.pop(), s.stack.pop()
        self._push(s.stack, ast.BinOp(self._value(left, s.i), _BINARY[s.op[7:]](), self._value(right, s.i)))

    def _op_inplace(self, s):
        """INPLACE_ADD, ... (3.9, 3.10): ``left <op>= right``, waiting for its store."""
        right, left = s.stack.pop(), s.stack.pop()
        self._push(s.stack, _InPlace(_BINARY[s.op[8:]](), self._value(left, s.i), self._value(right, s.i)))

    def _op_binary_op(self, s):
        """BINARY_OP (3.11+): the operator is the argument; 13 and above are the in-place forms."""
        i, arg = s.i, s.arg
        right, left = s.stack.pop(), s.stack.pop()
        if not isinstance(arg, int) or not 0 <= arg < 2 * len(_BINARY_OP):
            raise self.fail(i, f"operator {arg}")
        kind = _BINARY_OP[arg % len(_BINARY_OP)]()
        if arg >= len(_BINARY_OP):
            self._push(s.stack, _InPlace(kind, self._value(left, i), self._value(right, i)))
        else:
            self._push(s.stack, ast.BinOp(self._value(left, i), kind, self._value(right, i)))

    def _op_subscript(self, s):
        index, owner = s.stack.pop(), s.stack.pop()
        self._push(s.stack, ast.Subscript(self._value(owner, s.i), self._value(index, s.i), ast.Load()))

    def _op_slice_subscript(self, s):
        """BINARY_SLICE (3.12+): ``owner[begin:end]``."""
        end, begin, owner = s.stack.pop(), s.stack.pop(), s.stack.pop()
        piece = ast.Slice(self._optional(begin, s.i), self._optional(end, s.i), None)
        self._push(s.stack, ast.Subscript(self._value(owner, s.i), piece, ast.Load()))

    def _op_build_slice(self, s):
        parts = [s.stack.pop() for _ in range(s.arg)][::-1]
        self._push(s.stack, ast.Slice(*[self._optional(part, s.i) for part in parts] + [None] * (3 - s.arg)))

    def _op_unary(self, s):
        self._push(s.stack, ast.UnaryOp(_UNARY[s.op](), self._value(s.stack.pop(), s.i)))

    def _op_compare(self, s):
        right, left = s.stack.pop(), s.stack.pop()
        if s.val not in _COMPARE:
            raise self.fail(s.i, f"comparison {s.val!r}")
        self._push(s.stack, ast.Compare(self._value(left, s.i), [_COMPARE[s.val]()], [self._value(right, s.i)]))

    def _op_is(self, s):
        right, left = s.stack.pop(), s.stack.pop()
        is_ = ast.IsNot() if s.arg else ast.Is()
        self._push(s.stack, ast.Compare(self._value(left, s.i), [is_], [self._value(right, s.i)]))

    def _op_contains(self, s):
        right, left = s.stack.pop(), s.stack.pop()
        in_ = ast.NotIn() if s.arg else ast.In()
        self._push(s.stack, ast.Compare(self._value(left, s.i), [in_], [self._value(right, s.i)]))

    def _op_build_sequence(self, s):
        """BUILD_TUPLE, BUILD_LIST, BUILD_SET: a display of the top ``arg`` values."""
        items = [self._value(s.stack.pop(), s.i) for _ in range(s.arg)][::-1] if s.arg else []
        kind = {"BUILD_TUPLE": ast.Tuple, "BUILD_LIST": ast.List, "BUILD_SET": ast.Set}[s.op]
        self._push(s.stack, kind(items, ast.Load()) if kind is not ast.Set else ast.Set(items))

    def _op_extend(self, s):
        """LIST_EXTEND, SET_UPDATE: ``[*a, *b]`` (or a constant display, which the compiler builds this way)."""
        value = self._value(s.stack.pop(), s.i)
        target = s.stack[-s.arg]
        if not isinstance(target, (ast.List, ast.Set)):
            raise self.fail(s.i, "an extension of no list")
        if isinstance(value, ast.Tuple) and all(isinstance(e, ast.Constant) for e in value.elts) and not target.elts:
            target.elts.extend(value.elts)  # [1, 2, 3]: a constant tuple extended into an empty list
        elif isinstance(value, ast.Set) and s.op == "SET_UPDATE" and not target.elts:
            target.elts.extend(value.elts)
        else:
            target.elts.append(ast.Starred(value, ast.Load()))

    def _op_intrinsic(self, s):
        """CALL_INTRINSIC_1 (3.12+): 5 is unary ``+``, 6 a list made a tuple; the others are not read."""
        if s.arg == 5:
            self._push(s.stack, ast.UnaryOp(ast.UAdd(), self._value(s.stack.pop(), s.i)))
            return None
        if s.arg == 6:
            return self._op_list_to_tuple(s)
        raise self.fail(s.i, "not read by mgpu-io's decompiler")

    def _op_list_to_tuple(self, s):
        value = s.stack.pop()
        if not isinstance(value, ast.List):
            raise self.fail(s.i, "a tuple of no list")
        self._push(s.stack, ast.Tuple(value.elts, ast.Load()))
        return None

    def _op_build_map(self, s):
        items = [s.stack.pop() for _ in range(2 * s.arg)][::-1]
        keys, values = [self._value(k, s.i) for k in items[::2]], [self._value(v, s.i) for v in items[1::2]]
        self._push(s.stack, ast.Dict(keys, values))

    def _op_build_const_key_map(self, s):
        keys = s.stack.pop()
        values = [self._value(s.stack.pop(), s.i) for _ in range(s.arg)][::-1]
        if not isinstance(keys, ast.Tuple) or len(keys.elts) != s.arg:
            raise self.fail(s.i, "keys that are no constant tuple")
        self._push(s.stack, ast.Dict(list(keys.elts), values))

    def _op_dict_merge(self, s):
        """DICT_MERGE, DICT_UPDATE: ``{**a}`` (and a call's ``**kwargs``)."""
        value = self._value(s.stack.pop(), s.i)
        target = s.stack[-s.arg]
        if not isinstance(target, ast.Dict):
            raise self.fail(s.i, "an update of no dict")
        target.keys.append(None)
        target.values.append(value)

    def _op_append(self, s):
        """LIST_APPEND, SET_ADD, MAP_ADD, YIELD_VALUE: a comprehension's body reached its element."""
        if s.loop is None:
            raise self.fail(s.i, "an append outside a comprehension")
        if s.op == "MAP_ADD":
            value, key = s.stack.pop(), s.stack.pop()
            return _Appended(self._value(value, s.i), s.i, s.filters, self._value(key, s.i))
        return _Appended(self._value(s.stack.pop(), s.i), s.i, s.filters)

    def _op_build_string(self, s):
        """BUILD_STRING: an f-string of its parts."""
        parts = [self._value(s.stack.pop(), s.i) for _ in range(s.arg)][::-1]
        values = []
        for part in parts:
            values.extend(part.values if isinstance(part, ast.JoinedStr) else [part])
        self._push(s.stack, ast.JoinedStr(values))

    def _op_format_value(self, s):
        """FORMAT_VALUE: ``{value!conversion:spec}``."""
        spec = self._value(s.stack.pop(), s.i) if s.arg & 0x04 else None
        value = self._value(s.stack.pop(), s.i)
        conversion = {0: -1, 1: ord("s"), 2: ord("r"), 3: ord("a")}[s.arg & 0x03]
        formatted = ast.FormattedValue(value, conversion, spec if spec is None else ast.JoinedStr([spec]))
        self._push(s.stack, ast.JoinedStr([formatted]))

    def _op_convert_value(self, s):
        """CONVERT_VALUE (3.13): ``!s``, ``!r`` or ``!a`` of the value an f-string formats next."""
        if s.arg not in _CONVERSIONS:
            raise self.fail(s.i, f"conversion {s.arg!r}")
        self._push(s.stack, _Converted(self._value(s.stack.pop(), s.i), _CONVERSIONS[s.arg]))

    def _op_format_simple(self, s):
        """FORMAT_SIMPLE, FORMAT_WITH_SPEC (3.13): ``{value}``, ``{value:spec}`` (with its conversion, if any)."""
        spec = self._value(s.stack.pop(), s.i) if s.op == "FORMAT_WITH_SPEC" else None
        value, conversion = s.stack.pop(), -1
        if isinstance(value, _Converted):
            value, conversion = value.value, value.conversion
        if spec is not None:
            spec = spec if isinstance(spec, ast.JoinedStr) else ast.JoinedStr([spec])
        formatted = ast.FormattedValue(self._value(value, s.i), conversion, spec)
        self._push(s.stack, ast.JoinedStr([formatted]))

    def _op_kw_names(self, s):
        """KW_NAMES (3.12): the keyword names of the CALL that follows."""
        self.kw_names = s.val if isinstance(s.val, tuple) else self.code.co_consts[s.arg]

    def _op_call(self, s):
        """CALL_FUNCTION, CALL_FUNCTION_KW, CALL_METHOD, CALL: a call with ``arg`` arguments."""
        i, op, stack = s.i, s.op, s.stack
        names = ()
        if op == "CALL_FUNCTION_KW":
            names_node = stack.pop()
            if not isinstance(names_node, ast.Tuple):
                raise self.fail(i, "keyword names that are no tuple")
            names = tuple(e.value for e in names_node.elts)
        elif op == "CALL":
            names, self.kw_names = tuple(getattr(self, "kw_names", ()) or ()), ()
        elif op == "CALL_KW":  # 3.13: the keyword names, a constant tuple, on top
            names_node = stack.pop()
            if not isinstance(names_node, ast.Tuple) or not all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names_node.elts
            ):
                raise self.fail(i, "keyword names that are no tuple of names")
            names = tuple(e.value for e in names_node.elts)
        if len(names) > s.arg:
            raise self.fail(i, "more keyword names than arguments")
        args = [stack.pop() for _ in range(s.arg)][::-1]
        if self.version >= (3, 13):  # [callable, NULL or self, args...]
            below, function = stack.pop(), stack.pop()
            if not isinstance(below, _Null):  # a call with one more argument
                args = [below, *args]
            self._push(stack, self._call(function, args, names, i))
            return
        function = stack.pop()
        if op == "CALL_METHOD" or (op == "CALL" and self.version >= (3, 11)):
            below = stack.pop()
            if not isinstance(below, _Null):  # [callable, self, args...]: a call with one more argument
                function, args = below, [function, *args]
        self._push(stack, self._call(function, args, names, i))

    def _op_call_ex(self, s):
        """CALL_FUNCTION_EX: ``f(*args)`` or ``f(*args, **kwargs)``."""
        i, stack = s.i, s.stack
        keywords = self._value(stack.pop(), i) if s.arg & 1 else None
        positional = self._value(stack.pop(), i)
        if self.version >= (3, 13) and not isinstance(stack.pop(), _Null):  # 3.13: [callable, NULL, args, kwargs]
            raise self.fail(i, "a call of a method with * or ** arguments")
        function = stack.pop()
        if (3, 11) <= self.version < (3, 13) and stack and isinstance(stack[-1], _Null):
            stack.pop()
        args = positional.elts if isinstance(positional, ast.Tuple) else [ast.Starred(positional, ast.Load())]
        kws = []
        if isinstance(keywords, ast.Dict):
            for key, value in zip(keywords.keys, keywords.values):
                if key is None:
                    kws.append(ast.keyword(None, value))
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    kws.append(ast.keyword(key.value, value))
                else:
                    raise self.fail(i, "a keyword that is not a name")
        elif keywords is not None:
            kws.append(ast.keyword(None, keywords))
        self._push(stack, ast.Call(self._value(function, i), list(args), kws))

    def _op_make_function(self, s):
        """MAKE_FUNCTION: a comprehension's code or a nested lambda, with its defaults."""
        stack = s.stack
        if self.version >= (3, 13):  # the code alone: SET_FUNCTION_ATTRIBUTE gives the rest
            code = stack.pop()
            if not isinstance(code, _Function) or code.defaults is not None:
                raise self.fail(s.i, "a function of no code")
            self._push(stack, _Function(code.code, None))
            return
        if self.version < (3, 11):
            stack.pop()  # the qualified name
        code = stack.pop()
        parts = {}
        for flag, name in ((0x08, "closure"), (0x04, "annotations"), (0x02, "kwdefaults"), (0x01, "defaults")):
            if s.arg & flag:
                parts[name] = stack.pop()
        if "annotations" in parts or "kwdefaults" in parts:
            raise self.fail(s.i, "a nested function with annotations or keyword-only defaults")
        if not isinstance(code, _Function):
            raise self.fail(s.i, "a function of no code")
        self._push(stack, _Function(code.code, parts.get("defaults")))

    def _op_set_function_attribute(self, s):
        """SET_FUNCTION_ATTRIBUTE (3.13): a nested function's defaults (1) or closure (8), once each."""
        function, value = s.stack.pop(), s.stack.pop()
        if not isinstance(function, _Function) or s.arg not in (0x01, 0x08):
            raise self.fail(s.i, "a nested function with annotations or keyword-only defaults")
        if s.arg == 0x01:
            if function.defaults is not None:
                raise self.fail(s.i, "a function given its defaults twice")
            function = _Function(function.code, value)
        self._push(s.stack, function)

    def _op_get_iter(self, s):
        self._push(s.stack, _Iter(self._value(s.stack.pop(), s.i)))

    def _op_for_iter(self, s):
        """FOR_ITER outside a comprehension's code: a 3.12+ inlined comprehension (or a loop, refused)."""
        return self._inline_comprehension(s.i, s.val, s.stack, s.body, s.limit, s.loop)

    def _op_end_for(self, s):
        """END_FOR: nothing to the symbolic stack (3.12); 3.13's is read only after an inlined comprehension."""
        if self.version >= (3, 13):
            raise self.fail(s.i, "an END_FOR that ends no comprehension")

    def _op_swap(self, s):
        s.stack[-1], s.stack[-s.arg] = s.stack[-s.arg], s.stack[-1]

    def _op_rot_two(self, s):
        s.stack[-1], s.stack[-2] = s.stack[-2], s.stack[-1]

    def _op_rot_three(self, s):
        s.stack[-3:] = [s.stack[-1], s.stack[-3], s.stack[-2]]

    def _op_pop_top(self, s):
        """POP_TOP: an expression statement (or the end of a 3.12 comprehension's saved local)."""
        value = s.stack.pop()
        if isinstance(value, _Saved):
            return None
        s.body.append(ast.Expr(self._value(value, s.i)))
        return None

    def _op_return_value(self, s):
        s.body.append(ast.Return(self._value(s.stack.pop(), s.i)))
        return _Returned(s.body)

    def _op_return_const(self, s):
        s.body.append(ast.Return(self._constant(s.val, s.i)))
        return _Returned(s.body)

    def _op_jump(self, s):
        """JUMP_FORWARD, JUMP_ABSOLUTE, JUMP_BACKWARD, ...: the end of a block (or a shared ``return``)."""
        i, val, loop = s.i, s.val, s.loop
        if val == s.limit:
            return _Reached(s.stack, s.body)
        landing = self.ins[self.at[val]] if val in self.at else None
        if landing is not None and landing.opname in ("RETURN_VALUE", "RETURN_CONST") and loop is None:
            # a jump to a shared `return` (the optimizer's): that return, here
            value = (
                self._value(s.stack.pop(), i) if landing.opname == "RETURN_VALUE" else self._constant(landing.argval, i)
            )
            s.body.append(ast.Return(value))
            return _Returned(s.body)
        if loop is not None and val == loop:
            raise self.fail(i, "a comprehension body that ends before its append")
        return _Jumped("jump", val, s.stack, s.body)

    def _op_jump_or_pop(self, s):
        """JUMP_IF_FALSE_OR_POP, JUMP_IF_TRUE_OR_POP (3.9-3.11): ``and`` / ``or``."""
        i, op, val = s.i, s.op, s.val
        if s.limit is not None and val > s.limit:  # 3.9-3.11's (a and b) or c: the caller joins it
            value = self._value(s.stack.pop(), i)
            return _Jumped("or" if "TRUE" in op else "and", val, s.stack, s.body, value=value, index=i + 1)
        kind = ast.And if "FALSE" in op else ast.Or
        return self._boolean(i, i + 1, val, kind, s.stack, s.body, s.limit, s.loop)

    def _op_copy(self, s):
        """COPY 1, POP_JUMP_IF_*, POP_TOP: 3.12+'s ``and`` / ``or``; other copies are not read."""
        i, ins = s.i, self.ins
        if not (
            s.arg == 1
            and i + 2 < len(ins)
            and ins[i + 2].opname == "POP_TOP"
            and ins[i + 1].opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE")
        ):
            raise self.fail(i, "not read by mgpu-io's decompiler")
        kind = ast.And if ins[i + 1].opname.endswith("FALSE") else ast.Or
        self.visited.update((i + 1, i + 2))
        return self._boolean(i, i + 3, ins[i + 1].argval, kind, s.stack, s.body, s.limit, s.loop)

    def _op_pop_jump(self, s):
        """POP_JUMP_IF_FALSE, _TRUE, _NONE, _NOT_NONE: an ``if``, a conditional expression or a filter."""
        kind = s.op[len("POP_JUMP_IF_") :]
        return self._conditional(s.i, kind, s.val, s.stack, s.body, s.limit, s.loop, s.filters)

    #: Each opcode's handler (``POP_JUMP_IF_*``: :meth:`_op_pop_jump`, whatever follows the prefix).
    OPCODES = types.MappingProxyType(
        {
            "LOAD_CONST": _op_load_const,
            **dict.fromkeys(
                ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_NAME", "LOAD_CLASSDEREF"),
                _op_load_name,
            ),
            "LOAD_FAST_AND_CLEAR": _op_load_saved,
            "LOAD_GLOBAL": _op_load_global,
            "PUSH_NULL": _op_push_null,
            "LOAD_ATTR": _op_load_attr,
            "LOAD_METHOD": _op_load_method,
            **dict.fromkeys(("STORE_FAST", "STORE_DEREF", "STORE_NAME", "STORE_GLOBAL"), _op_store_name),
            "STORE_ATTR": _op_store_attr,
            "STORE_SUBSCR": _op_store_subscr,
            "UNPACK_SEQUENCE": _op_unpack_sequence,
            **dict.fromkeys(("BINARY_" + name for name in _BINARY), _op_binary),
            **dict.fromkeys(("INPLACE_" + name for name in _BINARY), _op_inplace),
            "BINARY_OP": _op_binary_op,
            "BINARY_SUBSCR": _op_subscript,
            "BINARY_SLICE": _op_slice_subscript,
            "BUILD_SLICE": _op_build_slice,
            **dict.fromkeys(_UNARY, _op_unary),
            "COMPARE_OP": _op_compare,
            "IS_OP": _op_is,
            "CONTAINS_OP": _op_contains,
            **dict.fromkeys(("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"), _op_build_sequence),
            **dict.fromkeys(("LIST_EXTEND", "SET_UPDATE"), _op_extend),
            "CALL_INTRINSIC_1": _op_intrinsic,
            "LIST_TO_TUPLE": _op_list_to_tuple,
            "BUILD_MAP": _op_build_map,
            "BUILD_CONST_KEY_MAP": _op_build_const_key_map,
            **dict.fromkeys(("DICT_MERGE", "DICT_UPDATE"), _op_dict_merge),
            **dict.fromkeys(("MAP_ADD", "LIST_APPEND", "SET_ADD", "YIELD_VALUE"), _op_append),
            "BUILD_STRING": _op_build_string,
            "FORMAT_VALUE": _op_format_value,
            "CONVERT_VALUE": _op_convert_value,
            **dict.fromkeys(("FORMAT_SIMPLE", "FORMAT_WITH_SPEC"), _op_format_simple),
            "KW_NAMES": _op_kw_names,
            **dict.fromkeys(("CALL_FUNCTION", "CALL_METHOD", "CALL", "CALL_FUNCTION_KW", "CALL_KW"), _op_call),
            "CALL_FUNCTION_EX": _op_call_ex,
            "MAKE_FUNCTION": _op_make_function,
            "SET_FUNCTION_ATTRIBUTE": _op_set_function_attribute,
            "GET_ITER": _op_get_iter,
            "FOR_ITER": _op_for_iter,
            "END_FOR": _op_end_for,
            "SWAP": _op_swap,
            "ROT_TWO": _op_rot_two,
            "ROT_THREE": _op_rot_three,
            "POP_TOP": _op_pop_top,
            "RETURN_VALUE": _op_return_value,
            "RETURN_CONST": _op_return_const,
            **dict.fromkeys(("JUMP_FORWARD", "JUMP_ABSOLUTE", "JUMP_BACKWARD", "JUMP", "JUMP_NO_INTERRUPT"), _op_jump),
            **dict.fromkeys(("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"), _op_jump_or_pop),
            "COPY": _op_copy,
        }
    )

    # --- pieces -------------------------------------------------------------------------------------------------
    def _constant(self, value, i):
        if hasattr(value, "co_code"):
            return _Function(value, None)
        try:
            return _const(value)
        except Unreadable as error:
            raise self.fail(i, str(error).split("(", 1)[-1].rstrip(")")) from None

    def _value(self, node, i):
        if isinstance(node, ast.AST):
            return node
        if isinstance(node, _Function) and node.code.co_name == "<lambda>":
            return self._lambda(node, i)
        raise self.fail(i, f"a value that is no expression ({type(node).__name__.strip('_')})")

    def _optional(self, node, i):
        value = self._value(node, i)
        return None if _none(value) else value

    def _store(self, target, value, body, i):
        if isinstance(value, _Saved):
            return  # a 3.12 comprehension restores the local it saved
        if isinstance(value, _InPlace):
            if not isinstance(target, ast.Name) or not isinstance(value.left, ast.Name) or value.left.id != target.id:
                raise self.fail(i, "an in-place operation stored elsewhere")
            body.append(ast.AugAssign(target, value.op, value.right))
            return
        if isinstance(value, _Unpacked):
            group = self.groups[value.group]
            group[1][value.index] = target
            if all(t is not None for t in group[1]):
                body.append(ast.Assign([ast.Tuple(group[1], ast.Store())], group[0]))
            return
        body.append(ast.Assign([target], self._value(value, i)))

    def _call(self, function, args, names, i):
        if isinstance(function, _Function) and function.code.co_name in _COMPREHENSIONS:
            if len(args) != 1 or not isinstance(args[0], _Iter) or names:
                raise self.fail(i, "a comprehension called unusually")
            return self._comprehension(function.code, args[0].node, i)
        function = self._value(function, i)
        args = [self._value(a, i) for a in args]
        split = len(args) - len(names)
        keywords = [ast.keyword(str(name), value) for name, value in zip(names, args[split:])]
        return ast.Call(function, args[:split], keywords)

    def _lambda(self, function, i):
        reader = Reader(function.code, self.version, self.nested(function.code), self.nested)
        code = function.code
        names = list(code.co_varnames)
        count, kwonly = code.co_argcount, getattr(code, "co_kwonlyargcount", 0) or 0
        position = count + kwonly
        varargs = names[position] if code.co_flags & 0x04 else None
        varkw = names[position + (1 if varargs else 0)] if code.co_flags & 0x08 else None
        defaults = function.defaults
        values = list(defaults.elts) if isinstance(defaults, ast.Tuple) else []
        posonly = getattr(code, "co_posonlyargcount", 0) or 0
        arguments = ast.arguments(
            posonlyargs=[ast.arg(n) for n in names[:posonly]],
            args=[ast.arg(n) for n in names[posonly:count]],
            vararg=ast.arg(varargs) if varargs else None,
            kwonlyargs=[ast.arg(n) for n in names[count:position]],
            kw_defaults=[None] * kwonly,
            kwarg=ast.arg(varkw) if varkw else None,
            defaults=values,
        )
        return ast.Lambda(arguments, reader.expression())

    def _boolean(self, i, start, target, kind, stack, body, limit, loop):
        """``left and right`` / ``left or right``: the right side runs from ``start`` to ``target``."""
        left = self._value(stack.pop(), i)
        right = self.walk(start, target, stack, loop)
        if not isinstance(right, _Reached) or right.body or len(right.stack) != len(stack) + 1:
            raise self.fail(i, "a boolean operation of an unusual shape")
        value = self._value(right.stack[-1], i)
        values = [left] + (value.values if isinstance(value, ast.BoolOp) and isinstance(value.op, kind) else [value])
        stack.append(ast.BoolOp(kind(), values))
        self.order[stack[-1]] = len(self.order)
        return self.index(target, i)

    def _condition(self, kind, value):
        if kind == "FALSE":
            return value
        if kind == "TRUE":
            return ast.UnaryOp(ast.Not(), value)
        if kind == "NONE":  # jumps when None: the block that follows runs when it is not
            return ast.Compare(value, [ast.IsNot()], [ast.Constant(None)])
        if kind == "NOT_NONE":
            return ast.Compare(value, [ast.Is()], [ast.Constant(None)])
        raise Unreadable("POP_JUMP_IF_" + kind, -1)

    def _conditional(self, i, kind, target, stack, body, limit, loop, filters):
        value = self._value(stack.pop(), i)
        if loop is not None and self._to_loop(target, loop):
            filters.append(self._condition(kind, value))  # a comprehension's `if`
            return i + 1
        if loop is not None and kind in ("TRUE", "FALSE", "NONE", "NOT_NONE") and i + 2 < len(self.ins):
            after = self.ins[i + 1]  # 3.12: POP_JUMP_IF_TRUE past a jump back: the filter's test is the value
            if (
                after.opname in ("JUMP_BACKWARD", "JUMP_ABSOLUTE")
                and after.argval == loop
                and self.ins[i + 2].offset == target
            ):
                inverse = {"TRUE": "FALSE", "FALSE": "TRUE", "NONE": "NOT_NONE", "NOT_NONE": "NONE"}[kind]
                self.visited.add(i + 1)
                filters.append(self._condition(inverse, value))
                return i + 2
        condition = self._condition(kind, value)
        if kind == "TRUE" and target > self.ins[i].offset:  # `a or b` as a condition: a jump past the second test
            first = self.walk(i + 1, target, stack, loop)
            if (
                isinstance(first, _Jumped)
                and first.kind == "false"
                and not first.body
                and len(first.stack) == len(stack)
            ):
                either = ast.BoolOp(ast.Or(), [value, first.value])
                return self._fork(i, either, self.index(target, i), first.target, stack, body, limit, loop)
        if limit is not None and target >= limit and kind in ("FALSE", "TRUE", "NONE", "NOT_NONE") and not body:
            # a second test that jumps where the first one does (`if a and b`), or past it (`if a or b`): joined
            return _Jumped("false", target, stack, body, value=condition, index=i + 1)
        return self._fork(i, condition, i + 1, target, stack, body, limit, loop)

    def _fork(self, i, condition, start, target, stack, body, limit, loop):
        """Code from ``start`` runs when ``condition`` holds; ``target`` is where it goes otherwise."""
        if target <= self.ins[i].offset:
            raise self.fail(i, "a jump backwards outside a comprehension")
        while True:  # `if a and b`: more tests that jump to the same place
            then = self.walk(start, target, stack, loop)
            if (
                isinstance(then, _Jumped)
                and then.kind == "false"
                and then.target == target
                and not then.body
                and len(then.stack) == len(stack)
            ):
                values = (
                    condition.values
                    if isinstance(condition, ast.BoolOp) and isinstance(condition.op, ast.And)
                    else [condition]
                )
                condition, start = ast.BoolOp(ast.And(), [*values, then.value]), then.index
                continue
            break
        if isinstance(then, _Reached):
            if len(then.stack) != len(stack) or not then.body:
                raise self.fail(i, "a conditional block of an unusual shape")
            body.append(ast.If(condition, then.body, []))
            return self.index(target, i)
        if isinstance(then, _Jumped) and then.kind == "jump":
            end = then.target
            if limit is not None and end > limit:
                raise self.fail(i, f"a jump to offset {end} leaves its block")
            other = self.walk(self.index(target, i), end, stack, loop)
            if not isinstance(other, _Reached):
                raise self.fail(i, "an else branch of an unusual shape")
            if len(then.stack) == len(stack) + 1 == len(other.stack) and not then.body and not other.body:
                a, b = self._value(then.stack[-1], i), self._value(other.stack[-1], i)
                stack.append(ast.IfExp(condition, a, b))
                self.order[stack[-1]] = len(self.order)
                return self.index(end, i)
            if len(then.stack) == len(stack) == len(other.stack) and then.body:
                body.append(ast.If(condition, then.body, other.body))
                return self.index(end, i)
            raise self.fail(i, "a conditional of an unusual shape")
        if isinstance(then, _Jumped) and then.kind == "or" and not then.body:  # 3.9-3.11: (a and b) or c
            other = self.walk(self.index(target, i), then.target, stack, loop)
            if not isinstance(other, _Reached) or other.body or len(other.stack) != len(stack) + 1:
                raise self.fail(i, "an `or` of an unusual shape")
            both = ast.BoolOp(ast.And(), [condition, then.value])
            stack.append(ast.BoolOp(ast.Or(), [both, self._value(other.stack[-1], i)]))
            return self.index(then.target, i)
        if isinstance(then, _Returned):
            rest = self.walk(self.index(target, i), limit, stack, loop)
            if self.code.co_name == "<lambda>":
                if not isinstance(rest, _Returned) or len(then.body) != 1 or len(rest.body) != 1:
                    raise self.fail(i, "a conditional return of an unusual shape")
                value = ast.IfExp(condition, then.body[0].value, rest.body[0].value)
                body.append(ast.Return(value))
                return _Returned(body)
            body.append(ast.If(condition, then.body, []))
            body.extend(rest.body)
            if isinstance(rest, _Returned):
                return _Returned(body)
            if isinstance(rest, _Reached):
                return _Reached(rest.stack, body)
            rest.body = body
            return rest
        raise self.fail(i, "a conditional of an unusual shape")

    def _to_loop(self, target, loop):
        if target == loop:
            return True
        n = self.at.get(target)
        return n is not None and self.ins[n].opname in ("JUMP_BACKWARD", "JUMP_ABSOLUTE") and self.ins[n].argval == loop

    # --- comprehensions -----------------------------------------------------------------------------------------
    def _loop(self, reader, i, iterable):
        """Read one ``for`` from FOR_ITER at ``reader.ins[i]``: ``(comprehension, element, key, index after)``."""
        loop = reader.ins[i].offset
        n = i + 1
        ins = reader.ins[n]
        if ins.opname in ("STORE_FAST", "STORE_DEREF", "STORE_NAME"):
            target, n = ast.Name(str(ins.argval), ast.Store()), n + 1
        elif ins.opname == "UNPACK_SEQUENCE":
            count = ins.arg
            names = reader.ins[n + 1 : n + 1 + count]
            if len(names) != count or any(t.opname not in ("STORE_FAST", "STORE_DEREF") for t in names):
                raise reader.fail(n, "a comprehension target that is not names")
            target = ast.Tuple([ast.Name(str(t.argval), ast.Store()) for t in names], ast.Store())
            n += 1 + count
        else:
            raise reader.fail(n, "a comprehension target that is not a name")
        appended = reader.walk(n, None, [], loop=loop)
        if not isinstance(appended, _Appended):
            raise reader.fail(n, "a comprehension of an unusual shape")
        k = appended.index + 1
        while k < len(reader.ins) and reader.ins[k].opname in ("RESUME", "POP_TOP", "NOP"):
            k += 1
        if (
            k >= len(reader.ins)
            or reader.ins[k].opname not in ("JUMP_BACKWARD", "JUMP_ABSOLUTE")
            or reader.ins[k].argval != loop
        ):
            raise reader.fail(min(k, len(reader.ins) - 1), "a comprehension with more than one `for`")
        reader.visited.update(range(i, n))  # FOR_ITER and the target's stores
        reader.visited.update(range(appended.index, k + 1))  # the append, and the jump back
        generator = ast.comprehension(target, iterable, appended.filters, 0)
        return generator, appended.element, appended.key, reader.index(reader.ins[i].argval, i)

    def _build(self, kind, generator, element, key):
        if kind == "<listcomp>":
            return ast.ListComp(element, [generator])
        if kind == "<setcomp>":
            return ast.SetComp(element, [generator])
        if kind == "<dictcomp>":
            return ast.DictComp(key, element, [generator])
        return ast.GeneratorExp(element, [generator])

    def _comprehension(self, code, iterable, i):
        reader = Reader(code, self.version, self.nested(code), self.nested)
        [start] = [n for n, ins in enumerate(reader.ins) if ins.opname == "FOR_ITER"][:1] or [None]
        if start is None:
            raise self.fail(i, f"a {code.co_name} without a loop")
        generator, element, key, _ = self._loop(reader, start, iterable)
        return self._build(code.co_name, generator, element, key)

    def _inline_comprehension(self, i, end, stack, body, limit, loop):
        """3.12+: a list, set or dict comprehension inlined into its function."""
        if len(stack) < 2 or not isinstance(stack[-1], _Iter):
            raise self.fail(i, "a `for` loop")
        iterable, collector = stack.pop().node, stack.pop()
        kinds = {ast.List: "<listcomp>", ast.Set: "<setcomp>", ast.Dict: "<dictcomp>"}
        if type(collector) not in kinds or (getattr(collector, "elts", None) or getattr(collector, "keys", None)):
            raise self.fail(i, "a `for` loop")
        generator, element, key, after = self._loop(self, i, iterable)
        stack.append(self._build(kinds[type(collector)], generator, element, key))
        ends = [ins.opname for ins in self.ins[after : after + 2]]
        if self.version >= (3, 13) and ends == ["END_FOR", "POP_TOP"]:  # 3.13: the exhausted iterator, popped
            self.visited.update((after, after + 1))
            return after + 2
        return after


def parameters(code):
    """``(args, kwonly, varargs, varkw)`` of a code object."""
    names = list(code.co_varnames)
    count, kwonly = code.co_argcount, getattr(code, "co_kwonlyargcount", 0) or 0
    position = count + kwonly
    varargs = names[position] if code.co_flags & 0x04 else None
    varkw = names[position + (1 if varargs else 0)] if code.co_flags & 0x08 else None
    return names[:count], names[count:position], varargs, varkw


def decompile(code, version, instructions, nested):
    """The source of ``code``'s body (a ``return ...`` for a lambda), as text.

    Raises:
        Unreadable: the bytecode holds something this decompiler does not read.
    """
    if tuple(version) not in VERSIONS:
        raise Unreadable("version", 0, f"Python {version} is not one of 3.9-3.13")
    reader = Reader(code, version, instructions, nested)
    body = reader.statements()
    return ast.unparse(ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))) + "\n"
