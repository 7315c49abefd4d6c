#!/bin/bash
#PBS -J 1-4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
