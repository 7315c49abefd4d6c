#!/bin/bash
#SBATCH-J glued
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
