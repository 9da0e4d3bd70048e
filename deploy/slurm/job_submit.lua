--[[
Tidal's submit gate for Slurm 22.05 (job_submit/lua).

Install: JobSubmitPlugins=lua in slurm.conf, this file as job_submit.lua in the SAME directory as
slurm.conf (slurmctld looks for it there), then `scontrol reconfigure` (or restart slurmctld).

What it does, and nothing else:
  1. slurm_job_submit: EVERY job, root's included, is held at submit (priority = 0; Slurm shows it
     PENDING, Reason JobHeldUser or JobHeldAdmin) and its AdminComment is set to
     "tidal: waiting for Tidal".
     Tidal (the tidal-slurm adapter) decides when and where it runs: it pins the held job
     (scontrol update JobId=J ReqNodeList=...) and releases it; slurmctld then starts it at once.
     Tidal writes why a job waits in its AdminComment (only admins can set that; `squeue -O
     admin_comment`, `scontrol show job`). The user's own --comment is kept: it carries the user's
     Tidal keys (docs/slurm.md), e.g. --comment="tidal.dev/topology-required=leaf".
  2. slurm_job_submit: a job submitted held (`sbatch --hold` / `-H`: 22.05 hands this file
     job_desc.priority == 0; NO_VAL otherwise) gets the word "tidal.dev/hold=true" added to its
     Comment (the rest of the comment is kept). Tidal does not place a pending job with that key:
     it stays held, its AdminComment says why, until the key goes.
  3. slurm_job_modify: only an adapter uid (TIDAL_ADAPTER_UIDS below; root by default) may change a
     job's priority, which is what `scontrol release|hold|uhold` and `Priority=` do. Without this rule
     the job's owner could `scontrol release` their own job and Slurm would start it by itself.
     Except the owner's holds, which become the key (the update succeeds):
       - `scontrol hold|uhold J` of a PENDING job: "tidal.dev/hold=true" added to its Comment; the
         priority 0 goes through too (a hold never starts anything; a job Tidal released but Slurm
         has not started yet stops at once).
       - `scontrol release J` of a PENDING job whose Comment has the key: the priority change is
         dropped (Slurm never starts it by itself: it stays at priority 0) and the key is removed;
         Tidal then places it like any waiting job.
     Any other priority change by another uid (a release of a job without the key, Priority=N, a
     hold of a running job) is refused as before.
  4. slurm_job_modify, adapter uids: Tidal's own holds and releases always set its AdminComment
     ("tidal: ...") in the same update; an operator's plain `scontrol hold|release J` does not, and
     is treated as in 3 (a hold becomes the key, a release of a job with the key removes it).
     Other priority changes by adapter uids pass. An operator may also set or remove the key with
     `scontrol update JobId=J Comment="... tidal.dev/hold=true"`.
  5. slurm_job_modify: only an adapter uid may set a Comment that starts with "tidal:" (Tidal's word
     on the job; a user must not forge it).
  6. slurm_job_modify: a job Tidal has released (pending, priority above 0: pinned to its nodes with
     ReqNodeList, Slurm about to start it) keeps the shape Tidal placed: another uid's change of
     its nodes, node or task count, GRES/TRES, CPUs or memory, partition, features, reservation,
     account or QOS is refused (else Slurm would start a job Tidal did not place, on nodes it gave
     to others, or charge another account). Hold it first (`scontrol hold J`: the key), change it,
     release it: Tidal places it anew. Other updates (time limit, comment, name, mail) go through.
  Everything else (scancel, the owner's other updates) is Slurm's normal behaviour.

Known limits (Slurm, not this file):
  - In 22.05, slurm.log_user() is discarded in slurm_job_modify: a refused update shows the user only
    Slurm's generic error ("Unspecified error" / "Error updating job"); the reason goes to slurmctld's log.
  - A requeued job (scontrol requeue, node failure with --requeue) does not pass through this file;
    the adapter must hold it again (or use `scontrol requeuehold`).
  - Fail closed: if this file does not load, slurmctld refuses to start ("failed to initialize
    job_submit plugin"); if it is broken while slurmctld runs, slurmctld keeps the previous version.
  - Interactive jobs (srun, salloc) are held as well: they wait until Tidal releases them.
  - 22.05's job_desc setters read an empty string as "unchanged": a Comment that held only the key
    becomes a single space when the key is removed.
  - job_ptr.job_state is a number here (slurm.JOB_PENDING is not defined): pending is base state 0.
]]

-- uids allowed to release, reprioritise and write "tidal:" comments: the account tidal-slurm runs as.
-- Add it here if it is not root (e.g. [64030] = true for SlurmUser "slurm").
local TIDAL_ADAPTER_UIDS = { [0] = true }
local TIDAL_PREFIX = "tidal:"
local WAITING = "tidal: waiting for Tidal"
-- The word that keeps a pending job from Tidal (shim/slurm: the same word, value "true" in any case).
local HOLD_KEY = "tidal.dev/hold="
local HOLD_WORD = HOLD_KEY .. "true"
-- Comment words are separated by blanks, commas or semicolons (as tidal-slurm reads them).
local WORD = "[^%s,;]+"

local function is_adapter(uid)
	return TIDAL_ADAPTER_UIDS[tonumber(uid)] == true
end

local function tidal_comment(s)
	return s ~= nil and string.sub(s, 1, #TIDAL_PREFIX) == TIDAL_PREFIX
end

local function hold_word(w)
	return string.sub(w, 1, #HOLD_KEY) == HOLD_KEY
end

-- Does the comment hold the job? The last tidal.dev/hold= word wins.
local function has_hold(comment)
	local held = false
	for w in string.gmatch(comment or "", WORD) do
		if hold_word(w) then
			held = string.lower(string.sub(w, #HOLD_KEY + 1)) == "true"
		end
	end
	return held
end

-- The comment without any tidal.dev/hold= word ("" when nothing else is left).
local function without_hold(comment)
	local c = string.gsub(comment or "", WORD, function(w)
		if hold_word(w) then return "" end
	end)
	c = string.gsub(c, "(%s)%s+", "%1")
	c = string.gsub(c, "^[%s,;]+", "")
	return (string.gsub(c, "[%s,;]+$", ""))
end

local function with_hold(comment)
	local c = without_hold(comment)
	if c == "" then return HOLD_WORD end
	return c .. " " .. HOLD_WORD
end

-- job_ptr.job_state: the base state in the low 8 bits (JOB_PENDING = 0), flags above.
local function pending(job_ptr)
	return job_ptr.job_state ~= nil and job_ptr.job_state % 256 == 0
end

-- A hold or release of a pending job as the hold key (3. and 4. above). Returns true when the
-- update was rewritten and may go on.
local function hold_as_key(job_desc, job_ptr, uid)
	if not pending(job_ptr) then return false end
	local base = job_desc.comment or job_ptr.comment
	if job_desc.priority == 0 then
		job_desc.comment = with_hold(base)
		slurm.log_info("tidal gate: hold of job %s by uid %s kept as %s in its comment",
			tostring(job_ptr.job_id), tostring(uid), HOLD_WORD)
		return true
	end
	if job_desc.priority == slurm.INFINITE and has_hold(base) then
		job_desc.priority = slurm.NO_VAL
		local c = without_hold(base)
		if c == "" then c = " " end  -- an empty string would leave the comment as it was
		job_desc.comment = c
		slurm.log_info("tidal gate: release of job %s by uid %s: %s removed, Tidal places it",
			tostring(job_ptr.job_id), tostring(uid), HOLD_WORD)
		return true
	end
	return false
end

-- Fields of an update that change where and what a job runs (6. above). Unset fields read nil
-- (strings) or NO_VAL (numbers: NO_VAL16 for the 16-bit ones, NO_VAL64 for memory).
local PLACEMENT_STRINGS = { "req_nodes", "exc_nodes", "partition", "features", "reservation", "account", "qos",
	"gres", "tres_per_job", "tres_per_node", "tres_per_socket", "tres_per_task", "cpus_per_tres", "mem_per_tres" }
local PLACEMENT_NUMBERS = { "min_nodes", "max_nodes", "num_tasks", "ntasks_per_node", "cpus_per_task",
	"pn_min_cpus", "pn_min_memory", "min_cpus", "max_cpus", "shared", "contiguous" }
local NO_VAL = 4294967294
local NO_VAL16 = 65534
local NO_VAL64 = 18446744073709551614

-- The first placement field the update sets, or nil.
local function placement_change(job_desc)
	for _, f in ipairs(PLACEMENT_STRINGS) do
		if job_desc[f] ~= nil then return f end
	end
	for _, f in ipairs(PLACEMENT_NUMBERS) do
		local v = job_desc[f]
		if v ~= nil and v ~= NO_VAL and v ~= NO_VAL16 and v ~= NO_VAL64 then return f end
	end
	return nil
end

-- Released by Tidal: pending with a priority above 0 (the gate holds every job at 0 otherwise).
local function released(job_ptr)
	return pending(job_ptr) and job_ptr.priority ~= nil and job_ptr.priority ~= 0
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if job_desc.priority == 0 then  -- sbatch --hold / -H
		job_desc.comment = with_hold(job_desc.comment)
	end
	job_desc.priority = 0
	job_desc.admin_comment = WAITING
	slurm.log_info("tidal gate: job %s of uid %s held for Tidal%s",
		tostring(job_desc.name), tostring(submit_uid), has_hold(job_desc.comment) and " (and by its " .. HOLD_WORD .. ")" or "")
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_ptr, part_list, modify_uid)
	local priority = job_desc.priority ~= nil and job_desc.priority ~= slurm.NO_VAL
	if is_adapter(modify_uid) then
		-- Tidal's own holds and releases carry its AdminComment; an operator's plain one does not.
		if priority and not tidal_comment(job_desc.admin_comment) then
			hold_as_key(job_desc, job_ptr, modify_uid)
		end
		return slurm.SUCCESS
	end
	if tidal_comment(job_desc.comment) then
		slurm.log_info("tidal gate: refused a \"tidal:\" comment on job %s by uid %s",
			tostring(job_ptr.job_id), tostring(modify_uid))
		slurm.log_user("comments starting with \"tidal:\" are reserved for Tidal")
		return slurm.ERROR
	end
	if not priority and released(job_ptr) then
		local f = placement_change(job_desc)
		if f ~= nil then
			slurm.log_info("tidal gate: refused a change of %s of job %s by uid %s: Tidal released it to its nodes",
				f, tostring(job_ptr.job_id), tostring(modify_uid))
			slurm.log_user("Tidal has released this job to its nodes: hold it (scontrol hold), change it, release it")
			return slurm.ERROR
		end
	end
	if priority and not hold_as_key(job_desc, job_ptr, modify_uid) then
		slurm.log_info("tidal gate: refused priority change (release/hold/Priority=) of job %s by uid %s",
			tostring(job_ptr.job_id), tostring(modify_uid))
		slurm.log_user("Tidal schedules this job: only Tidal can release or reprioritise it (see its Comment)")
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

slurm.log_info("tidal gate loaded (job_submit.lua)")
return slurm.SUCCESS
