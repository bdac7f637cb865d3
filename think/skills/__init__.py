"""Skills: instructions, resources and scripts the model loads when a task calls for them."""

from think.skills.library import SkillLibrary, SkillScript, SkillScriptResult, SkillScriptRunner
from think.skills.skill import Skill, SkillFile, SkillFolder, SkillSource

__all__ = [
    "Skill",
    "SkillFile",
    "SkillFolder",
    "SkillLibrary",
    "SkillScript",
    "SkillScriptResult",
    "SkillScriptRunner",
    "SkillSource",
]
